//! The error kinds and messages made of Redis's replies (`from_server`) and of other failures.

use super::*;

/// The error redis-rs makes of the server's reply `-<line>`.
fn from_server(line: &str) -> Error {
    let reply = redis::parse_redis_value(format!("-{line}\r\n").as_bytes()).unwrap();
    let err = reply.extract_error().unwrap_err();
    Error::from_redis(err, None)
}

/// The error of a script that failed on its line 12, as each server words it.
fn in_script(detail: &str) -> String {
    format!("ERR {detail} script: 0b67da13c0b8411163967996c0f69097c6ba9682, on @user_script:12.")
}

#[test]
fn a_reply_that_is_not_redis_is_named_in_one_line() {
    let http = "Incompatible type - Parse error at 1\nUnexpected `84`\nUnexpected `72`\n";
    assert_eq!(what_answered(http), "it answered as an HTTP server does");
    let ssh = "Parse error at 1\nUnexpected `83`\nUnexpected `0`\n";
    assert_eq!(
        what_answered(ssh),
        "its reply held 'S', 0x00 where Redis's protocol allows none"
    );
    assert_eq!(what_answered("Parse error"), "its reply could not be read");
}

#[test]
fn an_error_from_redis_keeps_the_redis_error_as_its_source() {
    use std::error::Error as _;
    let err = from_server("NOPERM this user has no permissions to run the 'zcard' command");
    let source = err.source().expect("a source");
    let redis_err = source
        .downcast_ref::<redis::RedisError>()
        .expect("redis-rs's error");
    assert_eq!(redis_err.code(), Some("NOPERM"));
    // The source survives context (what in_operation adds).
    let err = err.context("queue \"q\": stats");
    assert!(err.source().is_some());
}

#[test]
fn a_source_never_holds_the_password() {
    use std::error::Error as _;
    let reply = redis::parse_redis_value(b"-ERR bad s3cret-pw here\r\n").unwrap();
    let err = Error::from_redis(reply.extract_error().unwrap_err(), Some("s3cret-pw"));
    assert!(!err.to_string().contains("s3cret-pw"), "{err}");
    let source = err.source().expect("a source");
    assert!(!source.to_string().contains("s3cret-pw"), "{source}");
    assert!(!format!("{source:?}").contains("s3cret-pw"), "{source:?}");
    assert!(source.downcast_ref::<redis::RedisError>().is_none());
}

#[test]
fn every_error_code_maps_to_its_kind() {
    for (code, kind) in CODES {
        let err = from_server(&format!("{code} the server's own words"));
        assert_eq!(err.kind(), *kind, "{code}");
    }
}

#[test]
fn every_wording_maps_to_its_kind() {
    for (server, wording, kind) in WORDINGS {
        let err = from_server(&format!("ERR {wording} and the rest"));
        assert_eq!(err.kind(), *kind, "{server}: {wording}");
    }
}

#[test]
fn a_command_denied_inside_a_script_is_a_permission_error_on_redis_and_valkey() {
    let redis = in_script("The user executing the script can't run this command or subcommand");
    let valkey = in_script(
        "ACL failure in script: User worker has no permissions to run the 'lpop' command",
    );
    for line in [redis, valkey] {
        assert_eq!(from_server(&line).kind(), ErrorKind::Permission, "{line}");
    }
}

#[test]
fn a_key_denied_inside_a_script_is_a_permission_error_on_redis_and_valkey() {
    let redis = in_script(
        "The user executing the script can't access at least one of the keys mentioned in \
         the command arguments",
    );
    let valkey = in_script("ACL failure in script: No permissions to access a key");
    for line in [redis, valkey] {
        assert_eq!(from_server(&line).kind(), ErrorKind::Permission, "{line}");
    }
}

#[test]
fn a_command_denied_outside_a_script_names_the_command_on_redis_and_valkey() {
    for line in [
        "NOPERM this user has no permissions to run the 'lpop' command",
        "NOPERM User worker has no permissions to run the 'lpop' command",
    ] {
        let err = from_server(line);
        assert_eq!(err.kind(), ErrorKind::Permission);
        assert!(
            err.message().contains("may not run lpop"),
            "{}",
            err.message()
        );
    }
}

#[test]
fn credentials_refused_are_auth_errors_on_redis_and_valkey() {
    for line in [
        "NOAUTH Authentication required.",
        "WRONGPASS invalid username-password pair or user is disabled.",
    ] {
        assert_eq!(from_server(line).kind(), ErrorKind::Auth, "{line}");
    }
}

#[test]
fn an_ordinary_script_error_stays_a_redis_error() {
    let line =
        in_script("user_script:3: Script attempted to access nonexistent global variable 'x'");
    assert_eq!(from_server(&line).kind(), ErrorKind::Redis);
    let line = "ERR wrong number of arguments for 'lpop' command";
    assert_eq!(from_server(line).kind(), ErrorKind::Redis);
}

#[test]
fn only_fatal_kinds_stop_a_worker() {
    assert!(from_server("NOPERM no").is_fatal());
    assert!(from_server(&in_script(
        "ACL failure in script: No permissions to access a key"
    ))
    .is_fatal());
    assert!(!from_server("BUSY Redis is busy running a script").is_fatal());
    assert!(!from_server("LOADING Redis is loading the dataset in memory").is_fatal());
}

#[test]
fn a_cluster_that_did_not_settle_is_a_connection_error_that_says_the_command_did_not_run() {
    for line in [
        "MOVED 8999 127.0.0.1:7106",
        "ASK 8999 127.0.0.1:7106",
        "TRYAGAIN Multiple keys request during rehashing of slot",
        "CLUSTERDOWN The cluster is down",
    ] {
        let err = from_server(line);
        assert_eq!(err.kind(), ErrorKind::Connection, "{line}");
        assert!(err.message().contains("did not run"), "{err}");
    }
    // A script's own words that merely contain a cluster code stay what they were.
    let err = from_server(&in_script("the job MOVED elsewhere"));
    assert_eq!(err.kind(), ErrorKind::Redis, "{err}");
}
