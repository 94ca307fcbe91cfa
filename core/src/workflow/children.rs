//! A parent's children: how they ended (`children_results`, what a parent reads when it runs),
//! and a page of them, finished or not (`children`, for the CLI, the dashboard and `get`-style
//! views).

use super::*;
use crate::job::MAX_PAGE;

/// One child of a parent, finished or not ([`Queue::children`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChildInfo {
    /// The child's queue.
    pub queue: String,
    pub id: String,
    /// How it ended; `None` while it has not finished (or its parent has not heard yet).
    pub outcome: Option<ChildOutcome>,
}

/// A page of a parent's children ([`Queue::children`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChildPage {
    /// The children from the asked offset, in the order the flow gave them.
    pub children: Vec<ChildInfo>,
    /// How many children the parent has in all (0: none, or no such parent).
    pub total: u64,
}

impl Queue {
    /// Up to `limit` (at most [`MAX_PAGE`]; 0 gives none, and the total) of flow job
    /// `parent_id`'s children from `offset`, in the order its flow gave them, each with how it
    /// ended (`None`: not yet), and how many it has in all. A job that has no children, or is
    /// unknown, gives none. Reads one page, never the whole list: a parent may have
    /// [`MAX_FLOW_JOBS`] children. A parent's children are kept as long as its data. Costs one
    /// round trip (LLEN, LRANGE) per shard tried, the parent id's own first, and one HMGET of
    /// the page's outcomes.
    pub async fn children(
        &self,
        parent_id: &str,
        offset: usize,
        limit: usize,
    ) -> Result<ChildPage> {
        self.op("children", async {
            crate::job::validate_job_id(parent_id)?;
            if limit > MAX_PAGE {
                return Err(Error::invalid(format!(
                    "limit is {limit}; a page holds at most {MAX_PAGE} children"
                )));
            }
            let mut conn = self.client.conn().await?;
            // The parent's shard is its id's, or its group's: its own first, then the others.
            for shard in self.shards_to_search(parent_id) {
                let keys = &self.shards[shard];
                let list = format!("{}{parent_id}", keys.fl());
                let (total, refs): (u64, Vec<String>) = if limit == 0 {
                    let n: u64 = redis::cmd("LLEN")
                        .arg(&list)
                        .query_async(&mut conn)
                        .await
                        .map_err(|e| self.client.err(e))?;
                    (n, Vec::new())
                } else {
                    // LRANGE's stop is inclusive, and a negative one counts from the end.
                    let start = offset.min(isize::MAX as usize);
                    let stop = start.saturating_add(limit - 1).min(isize::MAX as usize);
                    redis::pipe()
                        .llen(&list)
                        .lrange(&list, start as isize, stop as isize)
                        .query_async(&mut conn)
                        .await
                        .map_err(|e| self.client.err(e))?
                };
                if total == 0 {
                    continue;
                }
                let mut children: Vec<ChildInfo> =
                    refs.iter().filter_map(|r| child_ref(r)).collect();
                if !children.is_empty() {
                    let fields: Vec<String> = children
                        .iter()
                        .map(|c| format!("{}\t{}", c.queue, c.id))
                        .collect();
                    let outcomes: Vec<Option<Vec<u8>>> = redis::cmd("HMGET")
                        .arg(format!("{}{parent_id}", keys.fk()))
                        .arg(&fields)
                        .query_async(&mut conn)
                        .await
                        .map_err(|e| self.client.err(e))?;
                    for (c, o) in children.iter_mut().zip(outcomes) {
                        c.outcome = o.as_deref().and_then(ChildOutcome::parse);
                    }
                }
                return Ok(ChildPage { children, total });
            }
            Ok(ChildPage {
                children: Vec::new(),
                total: 0,
            })
        })
        .await
    }

    /// How the children of job `parent_id` (of this queue) ended so far, in no particular order
    /// (each once). Read in pages, so a parent of many children does not block Redis.
    pub async fn children_results(&self, parent_id: &str) -> Result<Vec<ChildResult>> {
        self.op("children_results", async {
            crate::job::validate_job_id(parent_id)?;
            let mut out = Vec::new();
            for keys in self.shards.iter() {
                let key = format!("{}{parent_id}", keys.fk());
                let mut conn = self.client.conn().await?;
                let mut cursor = 0u64;
                loop {
                    let (next, page): (u64, Vec<(String, Vec<u8>)>) = redis::cmd("HSCAN")
                        .arg(&key)
                        .arg(cursor)
                        .arg("COUNT")
                        .arg(500)
                        .query_async(&mut conn)
                        .await
                        .map_err(|e| self.client.err(e))?;
                    for (field, value) in page {
                        let Some((queue, id)) = field.split_once('\t') else {
                            continue;
                        };
                        if let Some(outcome) = ChildOutcome::parse(&value) {
                            let outcome = self.open_outcome(outcome);
                            out.push(ChildResult {
                                queue: queue.to_string(),
                                id: id.to_string(),
                                outcome,
                            });
                        }
                    }
                    if next == 0 {
                        break;
                    }
                    cursor = next;
                }
            }
            Ok(out)
        })
        .await
    }
}

/// A child from its entry in the parent's list, `"<key base>\t<id>\t<queue>"`.
fn child_ref(r: &str) -> Option<ChildInfo> {
    let (_base, rest) = r.split_once('\t')?;
    let (id, queue) = rest.rsplit_once('\t')?;
    Some(ChildInfo {
        queue: queue.to_string(),
        id: id.to_string(),
        outcome: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_list_entry_names_the_childs_queue_and_id() {
        let c = child_ref("tideq:{parts#1.7}:\tpart-1\tparts").unwrap();
        assert_eq!((c.queue.as_str(), c.id.as_str()), ("parts", "part-1"));
        assert_eq!(child_ref("no tabs"), None);
    }
}
