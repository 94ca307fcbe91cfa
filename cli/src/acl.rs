//! A role's Redis ACL rules on a queue (the core's `acl` module): `tideq acl`.

use tideq::acl::{self, Role};

use crate::args::Conn;
use crate::connect::config;
use crate::exit::{print, Outcome};
use crate::render;

/// `tideq acl QUEUE ROLE [--rules-only]`: an ACL SETUSER line, or only its rules.
pub(crate) fn acl(c: &Conn, queue: &str, role: &str, rules_only: bool) -> Outcome {
    let prefix = config(c)?.prefix().to_string();
    let role = Role::parse(role)?;
    let rules = acl::rules(&prefix, queue, c.shards.unwrap_or(1), role)?;
    if rules_only {
        print(&rules);
    } else {
        print(&format!(
            "ACL SETUSER {queue}-{} on >{} {rules}",
            role.as_str(),
            render::PASSWORD_PLACEHOLDER
        ));
    }
    Ok(())
}
