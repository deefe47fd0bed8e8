//! Parse errors people can act on (KEY-7): byte position and reason,
//! pinned with insta.

use procroute::key::{canonical, hermes};

const BAD_KEYS: &[&str] = &[
    "",
    "agent",
    "agent:",
    "session:main:telegram:dm:1",
    "agent:Main:telegram:dm:1",
    "agent:main",
    "agent:main:",
    "agent:main:Telegram:dm:1",
    "agent:main:tele-gram:dm:1",
    "agent:main:telegram",
    "agent:main:telegram:grp:1",
    "agent:main:telegram:DM:1",
    "agent:main:telegram:dm",
    "agent:main:telegram:dm:",
    "agent:main:telegram:group:a~b",
    "agent:main:telegram:group:a\tb",
    "agent:main:telegram:group:%3a",
    "agent:main:telegram:group:%41",
    "agent:main:telegram:group:a%41",
    "agent:main:telegram:group:%E2%82",
    "agent:main:telegram:group:abc%",
    "agent:main:telegram:dm:1:~2",
    "agent:main:telegram:group:1:~",
    "agent:main:telegram:group:1:2:3",
    "agent:main:telegram:group:1:~2:3",
    "agent:main:telegram:group:1:t%zz",
    "agent:main:telegram:group:1:~u%zz",
];

fn table(parse: impl Fn(&str) -> Option<String>) -> String {
    BAD_KEYS
        .iter()
        .map(|k| {
            format!(
                "{k:?}\n    => {}\n",
                parse(k).unwrap_or_else(|| "(parses)".into())
            )
        })
        .collect()
}

#[test]
fn canonical_parse_errors() {
    insta::assert_snapshot!(table(|k| canonical::parse(k).err().map(|e| e.to_string())));
}

#[test]
fn hermes_parse_errors() {
    insta::assert_snapshot!(table(|k| hermes::parse(k).err().map(|e| e.to_string())));
}

#[test]
fn origin_errors_name_the_field() {
    let cases = [
        r#"{"platform":"telegram","chat_type":"dm","chat_id":""}"#,
        r#"{"platform":"telegram","chat_type":"group","chat_id":"1","thread_id":""}"#,
        r#"{"platform":"Telegram","chat_type":"dm","chat_id":"1"}"#,
        r#"{"platform":"telegram","chat_type":"supergroup","chat_id":"1"}"#,
        r#"{"platform":"telegram","chat_type":"dm","chat_id":1}"#,
        r#"{"platform":"telegram","chat_type":"dm","chat_id":"1","chat":"x"}"#,
    ];
    let out: String = cases
        .iter()
        .map(|c| {
            let r: Result<procroute::Origin, _> = serde_json::from_str(c);
            format!(
                "{c}\n    => {}\n",
                r.err().map(|e| e.to_string()).unwrap_or("(ok)".into())
            )
        })
        .collect();
    insta::assert_snapshot!(out);
}
