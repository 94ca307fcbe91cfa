//! Encryption at rest: AES-256-GCM (RustCrypto's `aes-gcm`) over a job's payload, result,
//! progress, log lines and error texts, before they are sent to Redis. Ids, task names, groups
//! and priorities stay clear, so routing, searches and the console work as before.
//!
//! A sealed value (docs/wire-format.md, "Encrypted values"):
//!
//! ```text
//! "TQE" | version (1 byte, 1) | key id length (1 byte) | key id (ASCII) | nonce (12 bytes)
//!       | ciphertext | tag (16 bytes)
//! ```
//!
//! The header (magic through key id) is the AEAD's associated data, so a value's key id cannot be
//! changed without the tag failing. Text fields (log lines, error texts) hold the same bytes in
//! standard base64 after the prefix `tqe1:`, so they stay UTF-8.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use aes_gcm::aead::{Aead, AeadCore, KeyInit, OsRng, Payload};
use aes_gcm::Aes256Gcm;
use base64::Engine;

use crate::error::{Error, Result};

/// The first bytes of every sealed value.
pub const MAGIC: &[u8; 3] = b"TQE";
/// The sealed format's version.
pub const SEALED_VERSION: u8 = 1;
/// The prefix of a sealed text field (its base64 follows).
pub const TEXT_PREFIX: &str = "tqe1:";
/// Longest key id, in bytes.
pub const MAX_KEY_ID_LEN: usize = 64;
/// A key's length in bytes (AES-256).
pub const KEY_LEN: usize = 32;
const NONCE_LEN: usize = 12;
const TAG_LEN: usize = 16;

/// What a key provider returns for a key id: the key's 32 bytes, or `None` when it has none.
pub type KeyProvider = dyn Fn(&str) -> Option<Vec<u8>> + Send + Sync;

/// A queue's encryption: the key id new values are encrypted with, and where keys come from
/// (a fixed keyring, or a provider called once per key id, e.g. a tenant's key service). Keys
/// are held for the handle's life once fetched. Rotate by making a new key current while the
/// old one stays readable: values keep the id of the key that sealed them.
#[derive(Clone)]
pub struct Encryption {
    inner: Arc<Inner>,
}

struct Inner {
    current: String,
    provider: Box<KeyProvider>,
    ciphers: Mutex<HashMap<String, Aes256Gcm>>,
}

impl std::fmt::Debug for Encryption {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Encryption")
            .field("current_key", &self.inner.current)
            .finish_non_exhaustive()
    }
}

impl PartialEq for Encryption {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }
}

/// Checks a key id: 1 to [`MAX_KEY_ID_LEN`] bytes of ASCII letters, digits, `.`, `_`, `-`.
pub fn validate_key_id(id: &str) -> Result<()> {
    if id.is_empty() || id.len() > MAX_KEY_ID_LEN {
        return Err(Error::invalid(format!(
            "key id {id:?} must be 1 to {MAX_KEY_ID_LEN} bytes"
        )));
    }
    if !id
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
    {
        return Err(Error::invalid(format!(
            "key id {id:?} may hold only ASCII letters, digits, '.', '_' and '-'"
        )));
    }
    Ok(())
}

fn cipher(id: &str, key: &[u8]) -> Result<Aes256Gcm> {
    if key.len() != KEY_LEN {
        return Err(Error::invalid(format!(
            "key {id:?} is {} bytes; an AES-256 key is {KEY_LEN} bytes",
            key.len()
        )));
    }
    Ok(Aes256Gcm::new_from_slice(key).expect("32-byte key"))
}

impl Encryption {
    /// Encryption with fixed keys by id, `current` sealing new values. `INVALID_ARGUMENT` for a
    /// key that is not 32 bytes, a bad key id, or a `current` not among `keys`.
    pub fn keyring<I, K, V>(current: &str, keys: I) -> Result<Self>
    where
        I: IntoIterator<Item = (K, V)>,
        K: Into<String>,
        V: AsRef<[u8]>,
    {
        Self::new(current, keys, None)
    }

    /// Encryption whose keys come from `provider` (called once per key id, then held), `current`
    /// sealing new values. The current key is asked for at once: `INVALID_ARGUMENT` when the
    /// provider has none or it is not 32 bytes.
    pub fn with_provider(
        current: &str,
        provider: impl Fn(&str) -> Option<Vec<u8>> + Send + Sync + 'static,
    ) -> Result<Self> {
        Self::new(
            current,
            Vec::<(String, Vec<u8>)>::new(),
            Some(Box::new(provider)),
        )
    }

    /// Both: fixed `keys`, and a `provider` asked for any other key id. The current key must be
    /// among `keys` or given by the provider (asked at once).
    pub fn new<I, K, V>(current: &str, keys: I, provider: Option<Box<KeyProvider>>) -> Result<Self>
    where
        I: IntoIterator<Item = (K, V)>,
        K: Into<String>,
        V: AsRef<[u8]>,
    {
        let e = Self::deferred(current, keys, provider)?;
        e.with_cipher(current, |_| ())?;
        Ok(e)
    }

    /// [`new`](Self::new), but a current key neither in `keys` nor known yet is asked of the
    /// provider when it is first needed (the first value sealed), not now: for a provider that
    /// cannot answer at once (Node's async `keyProvider`). A provider with no such key then fails
    /// that first use with `INVALID_ARGUMENT` naming it, before anything is written.
    pub fn deferred<I, K, V>(
        current: &str,
        keys: I,
        provider: Option<Box<KeyProvider>>,
    ) -> Result<Self>
    where
        I: IntoIterator<Item = (K, V)>,
        K: Into<String>,
        V: AsRef<[u8]>,
    {
        let mut ciphers = HashMap::new();
        for (id, key) in keys {
            let id = id.into();
            validate_key_id(&id)?;
            ciphers.insert(id.clone(), cipher(&id, key.as_ref())?);
        }
        validate_key_id(current)?;
        let has_provider = provider.is_some();
        let e = Encryption {
            inner: Arc::new(Inner {
                current: current.to_string(),
                provider: provider.unwrap_or_else(|| Box::new(|_| None)),
                ciphers: Mutex::new(ciphers),
            }),
        };
        if !has_provider && !e.inner.ciphers.lock().unwrap().contains_key(current) {
            return Err(Error::invalid(format!(
                "the current key {current:?} is not in the keyring"
            )));
        }
        Ok(e)
    }

    /// The key id new values are sealed with.
    pub fn current_key(&self) -> &str {
        &self.inner.current
    }

    fn with_cipher<T>(&self, id: &str, f: impl FnOnce(&Aes256Gcm) -> T) -> Result<T> {
        if let Some(c) = self.inner.ciphers.lock().unwrap().get(id) {
            return Ok(f(c));
        }
        let key = (self.inner.provider)(id)
            .ok_or_else(|| Error::invalid(format!("encryption key {id:?} is not available")))?;
        let c = cipher(id, &key)?;
        let out = f(&c);
        self.inner.ciphers.lock().unwrap().insert(id.to_string(), c);
        Ok(out)
    }

    /// `plain` sealed with the current key.
    pub fn seal(&self, plain: &[u8]) -> Result<Vec<u8>> {
        let id = self.current_key();
        let mut out = Vec::with_capacity(5 + id.len() + NONCE_LEN + plain.len() + TAG_LEN);
        out.extend_from_slice(MAGIC);
        out.push(SEALED_VERSION);
        out.push(id.len() as u8);
        out.extend_from_slice(id.as_bytes());
        let nonce = Aes256Gcm::generate_nonce(&mut OsRng);
        let ct = self.with_cipher(id, |c| {
            c.encrypt(
                &nonce,
                Payload {
                    msg: plain,
                    aad: &out,
                },
            )
        })?;
        let ct = ct.map_err(|_| Error::invalid("encryption failed"))?;
        out.extend_from_slice(&nonce);
        out.extend_from_slice(&ct);
        Ok(out)
    }

    /// The plain bytes of a sealed value; a value that is not sealed is returned as it is (one
    /// written before encryption was turned on). `INVALID_ARGUMENT` naming the key id when the
    /// key is unavailable or does not open it.
    pub fn open(&self, value: &[u8]) -> Result<Vec<u8>> {
        let Some(s) = Sealed::parse(value)? else {
            return Ok(value.to_vec());
        };
        let plain = self.with_cipher(s.key_id, |c| {
            c.decrypt(
                s.nonce.into(),
                Payload {
                    msg: s.ct,
                    aad: s.header,
                },
            )
        })?;
        plain.map_err(|_| {
            Error::invalid(format!(
                "cannot decrypt a value sealed with key {:?}: the key does not match it \
                 (wrong key, or the value was altered)",
                s.key_id
            ))
        })
    }

    /// A text sealed with the current key, as `tqe1:` and base64.
    pub fn seal_text(&self, plain: &str) -> Result<String> {
        let b = self.seal(plain.as_bytes())?;
        Ok(format!(
            "{TEXT_PREFIX}{}",
            base64::engine::general_purpose::STANDARD.encode(b)
        ))
    }

    /// The plain text of a sealed text field (a clear one is returned as it is).
    pub fn open_text(&self, value: &str) -> Result<String> {
        let Some(b) = text_bytes(value) else {
            return Ok(value.to_string());
        };
        let plain = self.open(&b)?;
        String::from_utf8(plain).map_err(|_| Error::invalid("a sealed text is not UTF-8"))
    }
}

fn text_bytes(value: &str) -> Option<Vec<u8>> {
    let rest = value.strip_prefix(TEXT_PREFIX)?;
    base64::engine::general_purpose::STANDARD.decode(rest).ok()
}

/// A sealed value's parts.
pub(crate) struct Sealed<'a> {
    pub key_id: &'a str,
    header: &'a [u8],
    nonce: &'a [u8; NONCE_LEN],
    ct: &'a [u8],
}

impl<'a> Sealed<'a> {
    /// `None` for a value that is not sealed; an error for one that starts like one but is cut.
    pub(crate) fn parse(v: &'a [u8]) -> Result<Option<Self>> {
        if v.len() < 5 || &v[..3] != MAGIC {
            return Ok(None);
        }
        let bad = || Error::invalid("a sealed value is truncated or of an unknown version");
        if v[3] != SEALED_VERSION {
            return Err(bad());
        }
        let n = v[4] as usize;
        let head = 5 + n;
        if v.len() < head + NONCE_LEN + TAG_LEN {
            return Err(bad());
        }
        let key_id = std::str::from_utf8(&v[5..head]).map_err(|_| bad())?;
        Ok(Some(Sealed {
            key_id,
            header: &v[..head],
            nonce: v[head..head + NONCE_LEN].try_into().expect("12 bytes"),
            ct: &v[head + NONCE_LEN..],
        }))
    }
}

/// The key id a value was sealed with, or `None` for a clear value (what the CLI shows as
/// "encrypted (key k2)" without the key).
pub fn sealed_key_id(value: &[u8]) -> Option<String> {
    Sealed::parse(value)
        .ok()
        .flatten()
        .map(|s| s.key_id.to_string())
}

/// [`sealed_key_id`] for a text field (`tqe1:` and base64).
pub fn sealed_text_key_id(value: &str) -> Option<String> {
    sealed_key_id(&text_bytes(value)?)
}

/// Reads keys from a key file: one `key_id=hex` or `key_id=base64` line each (64 hex digits or
/// 44 base64 characters: 32 bytes), `#` comments and blank lines skipped; the first key is the
/// current one. What the CLI's `--key-file` and `TIDEQ_KEY_FILE` read.
pub fn keyring_from_file_text(text: &str) -> Result<Encryption> {
    let mut keys = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (id, key) = line.split_once('=').ok_or_else(|| {
            Error::invalid(format!("key file line {}: expected key_id=key", n + 1))
        })?;
        let (id, key) = (id.trim(), key.trim());
        let bytes = if key.len() == 64 && key.bytes().all(|b| b.is_ascii_hexdigit()) {
            (0..32)
                .map(|i| u8::from_str_radix(&key[2 * i..2 * i + 2], 16).expect("hex"))
                .collect()
        } else {
            base64::engine::general_purpose::STANDARD
                .decode(key)
                .map_err(|_| {
                    Error::invalid(format!(
                        "key file line {}: key {id:?} is neither 64 hex digits nor base64",
                        n + 1
                    ))
                })?
        };
        keys.push((id.to_string(), bytes));
    }
    let Some(current) = keys.first().map(|k| k.0.clone()) else {
        return Err(Error::invalid("the key file holds no key"));
    };
    Encryption::keyring(&current, keys)
}

/// The queue's side: values sealed before a script call and opened after a reply, each a no-op
/// (no copy, no call) on a queue without encryption.
impl crate::Queue {
    pub(crate) fn seal_bytes<'a>(&self, v: &'a [u8]) -> Result<std::borrow::Cow<'a, [u8]>> {
        match &self.opts.encryption {
            Some(e) => e.seal(v).map(Into::into),
            None => Ok(v.into()),
        }
    }

    pub(crate) fn seal_str<'a>(&self, v: &'a str) -> Result<std::borrow::Cow<'a, str>> {
        match &self.opts.encryption {
            Some(e) if !v.is_empty() => e.seal_text(v).map(Into::into),
            _ => Ok(v.into()),
        }
    }

    /// A stored value opened (a clear one as it is); `INVALID_ARGUMENT` naming the key id when
    /// the queue has no key that opens it.
    pub(crate) fn open_bytes(&self, v: Vec<u8>) -> Result<Vec<u8>> {
        match &self.opts.encryption {
            Some(e) => e.open(&v),
            None => Ok(v),
        }
    }

    /// A child's outcome as its parent's queue reads it: a sealed result opened (kept sealed
    /// when this queue has no key for it, as `get` does), an error text shown.
    pub(crate) fn open_outcome(
        &self,
        outcome: crate::workflow::ChildOutcome,
    ) -> crate::workflow::ChildOutcome {
        use crate::workflow::ChildOutcome as O;
        match outcome {
            O::Completed(Some(r)) if self.opts.encryption.is_some() => {
                let opened = self.open_bytes(r.clone()).unwrap_or(r);
                O::Completed(Some(opened))
            }
            O::Failed(e) => O::Failed(self.shown_text(e)),
            O::Expired(e) => O::Expired(self.shown_text(e)),
            other => other,
        }
    }

    /// A stored text for showing: opened, or `encrypted (key <id>)` when it cannot be.
    pub(crate) fn shown_text(&self, v: String) -> String {
        let Some(id) = sealed_text_key_id(&v) else {
            return v;
        };
        match &self.opts.encryption {
            Some(e) => e
                .open_text(&v)
                .unwrap_or_else(|_| format!("encrypted (key {id})")),
            None => format!("encrypted (key {id})"),
        }
    }

    /// A job as `get` and the listings report it, its sealed values opened: a value the queue
    /// has no key for stays sealed (`unreadable` names its key; an error text reads
    /// `encrypted (key <id>)`).
    pub(crate) fn open_info(&self, info: &mut crate::JobInfo) {
        if let Some(err) = info.last_error.take() {
            info.last_error = Some(self.shown_text(err));
        }
        let Some(enc) = &self.opts.encryption else {
            return;
        };
        for v in [
            Some(&mut info.payload),
            info.result.as_mut(),
            info.progress.as_mut(),
        ]
        .into_iter()
        .flatten()
        {
            match enc.open(v) {
                Ok(plain) => *v = plain,
                Err(e) => {
                    info.unreadable
                        .get_or_insert_with(|| e.message().to_string());
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sealed_values_open_with_their_key_only() {
        let k1 = Encryption::keyring("k1", [("k1", [1u8; 32])]).unwrap();
        let s = k1.seal(b"secret").unwrap();
        assert_eq!(&s[..3], MAGIC);
        assert_eq!(sealed_key_id(&s).as_deref(), Some("k1"));
        assert_eq!(k1.open(&s).unwrap(), b"secret");
        assert_ne!(k1.seal(b"secret").unwrap(), s, "a fresh nonce each time");
        let wrong = Encryption::keyring("k1", [("k1", [2u8; 32])]).unwrap();
        assert!(wrong.open(&s).unwrap_err().message().contains("\"k1\""));
        let none = Encryption::keyring("k2", [("k2", [2u8; 32])]).unwrap();
        let e = none.open(&s).unwrap_err();
        assert!(e.message().contains("key \"k1\" is not available"), "{e}");
        let t = k1.seal_text("boom").unwrap();
        assert!(t.starts_with(TEXT_PREFIX));
        assert_eq!(sealed_text_key_id(&t).as_deref(), Some("k1"));
        assert_eq!(k1.open_text(&t).unwrap(), "boom");
        assert_eq!(k1.open(b"clear").unwrap(), b"clear");
        let mut altered = s.clone();
        *altered.last_mut().unwrap() ^= 1;
        assert!(k1.open(&altered).is_err());
        assert!(k1.open(&s[..10]).is_err());
    }

    #[test]
    fn bad_keys_are_refused_at_config() {
        let short = Encryption::keyring("k1", [("k1", [1u8; 16])]).unwrap_err();
        assert!(short.message().contains("32 bytes"), "{short}");
        assert!(Encryption::keyring("k9", [("k1", [1u8; 32])]).is_err());
        assert!(Encryption::keyring("bad id", [("bad id", [1u8; 32])]).is_err());
        assert!(Encryption::with_provider("k1", |_| None).is_err());
        assert!(Encryption::with_provider("k1", |_| Some(vec![0; 31])).is_err());
        let f = keyring_from_file_text(&format!(
            "# keys\nk2={}\nk1={}\n",
            "ab".repeat(32),
            "00".repeat(32)
        ))
        .unwrap();
        assert_eq!(f.current_key(), "k2");
        assert!(keyring_from_file_text("").is_err());
        assert!(keyring_from_file_text("k1=zz").is_err());
    }
}
