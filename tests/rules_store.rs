//! Chapter 3 of spec/SPEC.md, lanes and the session store: one named
//! test (or more) per STORE rule; test names start with the rule id.

#[path = "support/rules.rs"]
mod rules;

use rules::*;

#[test]
fn store_1_first_message_records_origin_on_its_canonical_lane() {
    let mut s = SessionStore::new(10);
    let a = topic("42", "alice");
    let (lane, created) = s.observe(&a, &Policy::default(), 5).expect("room");
    assert!(created);
    assert_eq!(lane.as_str(), "agent:main:telegram:group:-100:42");
    // Bob in the same shared topic: same lane, origin stays Alice's.
    let (lane2, created2) = s
        .observe(&topic("42", "bob"), &Policy::default(), 9)
        .expect("room");
    assert_eq!((lane2.clone(), created2), (lane.clone(), false));
    let e = s.get(&lane).expect("entry");
    assert_eq!((&e.origin, e.created_ms, e.updated_ms), (&a, 5, 9));
}

#[test]
fn store_2_reset_gives_new_conversation_and_keeps_origin() {
    let mut s = SessionStore::new(10);
    let a = topic("42", "alice");
    let (lane, _) = s.observe(&a, &Policy::default(), 0).expect("room");
    let before = s.get(&lane).expect("entry").conversation;
    let after = s.reset(&lane, 1).expect("exists");
    assert_ne!(before, after);
    assert_eq!(s.get(&lane).expect("entry").origin, a);
    assert!(matches!(
        s.reset(&Lane::of(&topic("1", "x"), &Policy::default()), 2),
        Err(StoreError::NoSuchLane { .. })
    ));
}

#[test]
fn store_3_a_full_store_refuses_new_lanes_and_keeps_old_ones() {
    let mut s = SessionStore::new(1);
    s.observe(&topic("1", "a"), &Policy::default(), 0)
        .expect("room");
    let err = s
        .observe(&topic("2", "a"), &Policy::default(), 0)
        .expect_err("full");
    assert!(err.to_string().contains("limit"), "{err}");
    assert_eq!(s.len(), 1);
}

#[test]
fn store_4_file_backend_round_trips_atomically() {
    let (_dir, path) = temp("roundtrip");
    let mut s = SessionStore::new(10);
    s.observe(&topic("42", "alice"), &Policy::default(), 1)
        .expect("room");
    let mut f = FilePersist::new(&path);
    f.store(&s.encode()).expect("writes");
    assert!(
        !path.with_extension("json.tmp").exists(),
        "temp file left behind"
    );
    let bytes = f.load().expect("reads").expect("exists");
    assert_eq!(SessionStore::decode(&bytes, 10).expect("decodes"), s);
    assert!(String::from_utf8_lossy(&bytes).contains("\"version\":1"));
}

#[test]
fn store_5_bad_files_are_typed_errors_naming_the_file_and_left_intact() {
    let mut s = SessionStore::new(10);
    s.observe(&topic("42", "alice"), &Policy::default(), 1)
        .expect("room");
    let good = s.encode();
    let good_text = String::from_utf8(good.clone()).expect("utf8");
    type Case = (&'static str, Vec<u8>, fn(&FileProblem) -> bool);
    let cases: Vec<Case> = vec![
        ("truncated", good[..good.len() / 2].to_vec(), |p| {
            matches!(p, FileProblem::Truncated { .. })
        }),
        ("corrupt", b"{\"format\":nope}".to_vec(), |p| {
            matches!(p, FileProblem::Corrupt { .. })
        }),
        (
            "version",
            good_text
                .replace("\"version\":1", "\"version\":9")
                .into_bytes(),
            |p| {
                matches!(
                    p,
                    FileProblem::UnknownVersion {
                        found: 9,
                        supported: 1
                    }
                )
            },
        ),
        (
            "format",
            good_text
                .replace("procroute.store", "procroute.other")
                .into_bytes(),
            |p| matches!(p, FileProblem::WrongFormat { .. }),
        ),
        // A tampered file cannot re-point a lane to another thread.
        (
            "tampered",
            good_text
                .replace("\"thread_id\":\"42\"", "\"thread_id\":\"43\"")
                .into_bytes(),
            |p| matches!(p, FileProblem::Corrupt { detail } if detail.contains("does not match")),
        ),
    ];
    for (name, bytes, ok) in cases {
        let (_dir, path) = temp(name);
        std::fs::write(&path, &bytes).expect("write");
        let backend = FilePersist::new(&path);
        let err = procroute::persist::load_with(&backend, |b| SessionStore::decode(b, 10))
            .expect_err(name);
        match &err {
            PersistError::Bad { file, problem } => {
                assert!(file.contains(name), "{name}: {err}");
                assert!(ok(problem), "{name}: {problem:?}");
            }
            other => panic!("{name}: {other}"),
        }
        assert_eq!(
            std::fs::read(&path).expect("still there"),
            bytes,
            "{name}: file changed"
        );
    }
}

/// STORE-6: a huge file is refused before it is read (sparse file, cheap).
#[test]
fn store_6_oversized_files_are_refused_unread() {
    let (_dir, path) = temp("huge");
    let f = std::fs::File::create(&path).expect("create");
    f.set_len(procroute::persist::MAX_FILE_BYTES + 1)
        .expect("sparse");
    let err = FilePersist::new(&path).load().expect_err("too large");
    assert!(err.to_string().contains("limit"), "{err}");
    let _ = std::fs::remove_file(&path);
}

/// STORE-5 for all three files: recovery refuses a bad checkpoint or
/// delivery log with the file kind and the problem, instead of starting
/// with routing or promises missing.
#[test]
fn store_5_recover_names_which_file_is_bad() {
    let mut g = Gateway::new(Config::default());
    let a = topic("42", "alice");
    g.handle(0, spawn(a, "p".into(), vec![]));
    let (s, c, d) = (
        g.store().encode(),
        g.registry().encode(),
        g.delivery().encode(),
    );
    let cut = |b: &[u8]| b[..b.len() - 5].to_vec();
    let cases = [
        (FileKind::Store, cut(&s), c.clone(), d.clone()),
        (FileKind::Checkpoint, s.clone(), cut(&c), d.clone()),
        (FileKind::Delivery, s.clone(), c.clone(), cut(&d)),
        (FileKind::Checkpoint, s.clone(), d.clone(), d.clone()),
    ];
    for (kind, s2, c2, d2) in cases {
        let err = Gateway::recover(
            Config::default(),
            Some(&s2),
            Some(&c2),
            Some(&d2),
            1,
            |_, _| true,
        )
        .expect_err("refused");
        assert_eq!(err.0, kind, "{err:?}");
    }
    assert!(Gateway::recover(
        Config::default(),
        Some(&s),
        Some(&c),
        Some(&d),
        1,
        |_, _| true
    )
    .is_ok());
}

/// STORE-5: a file that cannot be read (wrong permissions, a directory in
/// its place) is an I/O error naming the file, and stays as it was.
#[test]
fn store_5_unreadable_files_are_io_errors_naming_the_file() {
    use procroute::driver::files::FileSystem;
    use std::io;
    use std::path::Path;
    // Permissions, through the FileSystem seam (root reads mode-000 files,
    // so the real disk cannot show this under CI's root user).
    #[derive(Debug)]
    struct Denied;
    impl FileSystem for Denied {
        fn len(&self, _: &Path) -> io::Result<Option<u64>> {
            Ok(Some(10))
        }
        fn read(&self, _: &Path) -> io::Result<Vec<u8>> {
            Err(io::ErrorKind::PermissionDenied.into())
        }
        fn write(&mut self, _: &Path, _: &[u8]) -> io::Result<()> {
            Err(io::ErrorKind::PermissionDenied.into())
        }
        fn append(&mut self, _: &Path, _: &[u8]) -> io::Result<()> {
            Err(io::ErrorKind::PermissionDenied.into())
        }
        fn sync_file(&mut self, _: &Path) -> io::Result<()> {
            Ok(())
        }
        fn rename(&mut self, _: &Path, _: &Path) -> io::Result<()> {
            Ok(())
        }
        fn sync_dir(&mut self, _: &Path) -> io::Result<()> {
            Ok(())
        }
    }
    let mut denied = FilePersist::with_fs("/var/lib/gw/checkpoint.json", Denied);
    let err = denied.load().expect_err("denied");
    assert!(
        matches!(&err, PersistError::Io { file, source }
            if file == "/var/lib/gw/checkpoint.json" && source.kind() == std::io::ErrorKind::PermissionDenied),
        "{err}"
    );
    assert!(denied.store(b"x").is_err());
    // The journal backend: the same refusal, naming its file.
    let c = procroute::gateway::Config::default();
    let err = procroute::driver::journal::JournalFiles::open(
        "/var/lib/gw",
        Denied,
        Default::default(),
        &c.limits,
        &c.delivery,
    )
    .expect_err("denied");
    assert!(
        matches!(&err, PersistError::Io { file, source }
            if file == "/var/lib/gw/base" && source.kind() == std::io::ErrorKind::PermissionDenied),
        "{err}"
    );
    // A directory where the file should be, on the real disk.
    let (_dir, path) = temp("a-directory");
    std::fs::create_dir_all(&path).expect("dir");
    let err = FilePersist::new(&path).load().expect_err("a directory");
    assert!(err.to_string().contains("a-directory"), "{err}");
    assert!(path.is_dir(), "left as it was");
}

/// STORE-1, STORE-2: every new lane gets its own conversation id, and the
/// store counts its lanes.
#[test]
fn store_1_new_lanes_get_distinct_conversations_and_are_counted() {
    let mut s = SessionStore::new(10);
    assert!(s.is_empty());
    let mut conversations = std::collections::BTreeSet::new();
    for (i, t) in ["1", "2", "3"].iter().enumerate() {
        let (lane, created) = s
            .observe(&topic(t, "alice"), &Policy::default(), 0)
            .expect("room");
        assert!(created);
        assert!(conversations.insert(s.get(&lane).expect("entry").conversation));
        assert_eq!(s.len(), i + 1);
    }
    assert!(!s.is_empty());
}

/// STORE-5: a lane whose recorded origin differs in any one routing field
/// (platform, chat type, chat id, thread id) is refused, and the limit on
/// lanes is checked at its exact boundary. Errors name the lane (Display and
/// Debug show the key).
#[test]
fn store_5_every_routing_field_is_checked_against_its_lane() {
    let mut s = SessionStore::new(10);
    let (lane, _) = s
        .observe(&topic("42", "alice"), &Policy::default(), 1)
        .expect("room");
    let text = String::from_utf8(s.encode()).expect("utf8");
    let origin_field = |field: &str, from: &str, to: &str| {
        let needle = format!("\"{field}\":\"{from}\"");
        // Only inside the recorded origin: the lane key has no `"field":`.
        assert!(text.contains(&needle), "{needle} not in {text}");
        text.replace(&needle, &format!("\"{field}\":\"{to}\""))
    };
    let chat = topic("42", "alice").chat_id().as_str().to_owned();
    for (what, bytes) in [
        ("platform", origin_field("platform", "telegram", "discord")),
        ("chat type", origin_field("chat_type", "group", "channel")),
        ("chat id", origin_field("chat_id", &chat, "-100999")),
        ("thread id", origin_field("thread_id", "42", "43")),
    ] {
        match SessionStore::decode(bytes.as_bytes(), 10) {
            Err(FileProblem::Corrupt { detail }) => {
                assert!(detail.contains("does not match"), "{what}: {detail}");
                assert!(
                    detail.contains(lane.as_str()),
                    "{what}: the error names the lane: {detail}"
                );
            }
            other => panic!("{what}: {other:?}"),
        }
    }
    // Exactly at the limit is fine; one lane over is not.
    let mut two = SessionStore::new(2);
    two.observe(&topic("1", "a"), &Policy::default(), 0)
        .expect("room");
    two.observe(&topic("2", "a"), &Policy::default(), 0)
        .expect("room");
    let bytes = two.encode();
    assert_eq!(
        SessionStore::decode(&bytes, 2).expect("at the limit").len(),
        2
    );
    assert!(matches!(
        SessionStore::decode(&bytes, 1),
        Err(FileProblem::Corrupt { .. })
    ));
    assert_eq!(format!("{lane}"), lane.as_str());
    assert_eq!(format!("{lane:?}"), format!("{:?}", lane.as_str()));
}
