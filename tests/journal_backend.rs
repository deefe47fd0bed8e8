//! The journal backend (`driver::journal`) on hostile and damaged files:
//! every refusal is a typed error naming the file, and a refused open
//! writes nothing (the files stay as they were, for a human). Also the
//! backend's own bookkeeping: one fsync per group commit, compaction into
//! a base, stale journals after an interrupted compaction, torn tails cut
//! before the next append.

use procroute::delta::{Durability, Record};
use procroute::driver::files::FileSystem;
use procroute::driver::journal::{JournalFiles, JournalLimits};
use procroute::gateway::{Config, Gateway, Input, Output};
use procroute::journal;
use procroute::origin::{ChatType, Origin};
use procroute::persist::{FileProblem, PersistError};
use procroute_suite::simfs::SimFs;
use std::path::Path;

fn config() -> Config {
    Config {
        durability: Durability::Journal,
        ..Config::default()
    }
}

fn open(
    fs: &SimFs,
) -> Result<(JournalFiles<SimFs>, procroute::driver::journal::Opened), PersistError> {
    let c = config();
    JournalFiles::open(
        "/gw",
        fs.clone(),
        JournalLimits::default(),
        &c.limits,
        &c.delivery,
    )
}

fn origin() -> Origin {
    Origin::new("telegram", ChatType::Group, "-100123")
        .and_then(|o| o.with_thread("7"))
        .expect("origin")
}

/// A journal holding a lane, a run with output, and a queued completion.
fn filled(fs: &SimFs) -> (Gateway, JournalFiles<SimFs>) {
    let (mut j, _) = open(fs).expect("empty journal");
    let mut g = Gateway::new(config());
    let inputs = vec![
        Input::Message { origin: origin() },
        Input::Spawn {
            origin: origin(),
            process_id: "build".into(),
            command: "make".into(),
            watch_patterns: vec!["ERR".into()],
            notify_on_exit: true,
        },
    ];
    for input in inputs {
        for o in g.handle(1, input) {
            if let Output::Append { records } = o {
                j.append(&records).expect("append");
            }
        }
    }
    (g, j)
}

/// The rebuilt files equal the gateway's, file by file (named on failure).
fn same(rebuilt: &[Vec<u8>; 3], g: &mut Gateway) {
    let live = g.compact();
    for (k, name) in ["store", "checkpoint", "delivery log"].iter().enumerate() {
        assert!(
            rebuilt[k] == live[k],
            "the {name} differs:\nrebuilt: {}\ngateway: {}",
            String::from_utf8_lossy(&rebuilt[k]),
            String::from_utf8_lossy(&live[k])
        );
    }
}

fn bytes(fs: &SimFs, p: &str) -> Vec<u8> {
    fs.read(Path::new(p)).expect("file exists")
}

fn put(fs: &SimFs, p: &str, b: &[u8]) {
    let mut fs = fs.clone();
    fs.write(Path::new(p), b).expect("write");
}

/// Opening must refuse with a `Bad` error naming `file`, and leave both
/// files byte for byte as they were.
fn refused(fs: &SimFs, file: &str) -> FileProblem {
    let before = (
        fs.read(Path::new("/gw/base")).ok(),
        bytes(fs, "/gw/journal"),
    );
    let err = open(fs).expect_err("a damaged journal must be refused");
    let after = (
        fs.read(Path::new("/gw/base")).ok(),
        bytes(fs, "/gw/journal"),
    );
    assert_eq!(before, after, "a refused open wrote to the files");
    match err {
        PersistError::Bad { file: f, problem } => {
            assert_eq!(f, file, "the error names the wrong file: {problem}");
            problem
        }
        other => panic!("expected a typed problem, got {other}"),
    }
}

#[test]
fn a_reopened_journal_rebuilds_the_gateways_files() {
    let fs = SimFs::new();
    let (mut g, _) = filled(&fs);
    let (_, opened) = open(&fs).expect("reopen");
    same(&opened.files, &mut g);
    assert!(opened.records > 0);
}

#[test]
fn one_fsync_per_group_commit() {
    let fs = SimFs::new();
    let (_, j) = filled(&fs);
    let s = j.stats();
    assert!(s.commits >= 2, "{s:?}");
    // Creating the empty journal: its file and its directory.
    assert_eq!(s.fsyncs, s.commits + 2, "{s:?}");
}

#[test]
fn store_7_garbage_in_the_middle_of_acknowledged_batches_is_refused() {
    let fs = SimFs::new();
    let (_, _j) = filled(&fs);
    let mut b = bytes(&fs, "/gw/journal");
    // A byte inside the first record of batch 1 (after the generation's
    // batch), with later batches committed after it.
    let at = journal::MAGIC.len() + 60;
    b[at] ^= 0x5a;
    put(&fs, "/gw/journal", &b);
    let p = refused(&fs, "/gw/journal");
    assert!(matches!(p, FileProblem::Corrupt { .. }), "{p}");
}

#[test]
fn a_file_that_is_not_a_journal_is_refused_by_name() {
    let fs = SimFs::new();
    let (_, _j) = filled(&fs);
    put(
        &fs,
        "/gw/journal",
        b"{\"format\":\"procroute.store\",\"version\":1}",
    );
    let p = refused(&fs, "/gw/journal");
    assert!(matches!(p, FileProblem::WrongFormat { .. }), "{p}");
}

#[test]
fn records_that_do_not_fit_the_state_are_refused() {
    // A well-framed journal whose record names a run the base never held
    // (a journal from another gateway, or a hand edit).
    let fs = SimFs::new();
    drop(open(&fs).expect("empty journal"));
    let mut b = bytes(&fs, "/gw/journal");
    let rec = br#"{"checkpoint":{"change":{"op":"tail","run":99,"tail":"x"}}}"#;
    b.extend(journal::batch(1, &[rec]));
    put(&fs, "/gw/journal", &b);
    let p = refused(&fs, "/gw/journal");
    assert!(p.to_string().contains("run 99"), "{p}");
    // A record that is not JSON at all, correctly checksummed.
    let mut b = bytes(&fs, "/gw/journal");
    b.truncate(b.len() - journal::batch(1, &[rec]).len());
    b.extend(journal::batch(1, &[b"\xff\xfenot json"]));
    put(&fs, "/gw/journal", &b);
    let p = refused(&fs, "/gw/journal");
    assert!(p.to_string().contains("journal record"), "{p}");
}

#[test]
fn a_journal_newer_than_its_base_is_refused() {
    let fs = SimFs::new();
    drop(open(&fs).expect("empty journal"));
    let mut b = journal::header();
    b.extend(journal::batch(
        0,
        &[&Record::Generation { number: 5 }.encode()],
    ));
    put(&fs, "/gw/journal", &b);
    let p = refused(&fs, "/gw/journal");
    assert!(p.to_string().contains("newer than its base"), "{p}");
}

#[test]
fn a_damaged_or_forged_base_is_refused() {
    let fs = SimFs::new();
    let (mut g, mut j) = filled(&fs);
    j.compact(g.compact()).expect("compact");
    let good = bytes(&fs, "/gw/base");
    // Any damage: the base is written whole by atomic replace, never torn.
    let mut b = good.clone();
    b.truncate(b.len() - 3);
    put(&fs, "/gw/base", &b);
    let p = refused(&fs, "/gw/base");
    assert!(matches!(p, FileProblem::Corrupt { .. }), "{p}");
    // A base whose checkpoint image is another file's.
    let store = g.compact()[0].clone();
    let mut forged = journal::header();
    forged.extend(journal::batch(
        0,
        &[
            &Record::Generation { number: 1 }.encode(),
            &store,
            &store,
            &store,
        ],
    ));
    put(&fs, "/gw/base", &forged);
    let p = refused(&fs, "/gw/base");
    assert!(p.to_string().contains("Checkpoint"), "{p}");
    put(&fs, "/gw/base", &good);
    open(&fs).expect("the good base opens again");
}

#[test]
fn a_torn_tail_is_cut_before_the_next_append() {
    let fs = SimFs::new();
    let (mut g, _j) = filled(&fs);
    let clean = bytes(&fs, "/gw/journal");
    let mut b = clean.clone();
    b.extend(&journal::batch(9, &[b"half a record"])[..11]);
    put(&fs, "/gw/journal", &b);
    let (mut j, opened) = open(&fs).expect("a torn tail is not damage");
    assert!(opened.torn.is_some());
    assert_eq!(bytes(&fs, "/gw/journal"), clean, "the torn tail was kept");
    // Appending after the cut reads back.
    let out = g.handle(
        2,
        Input::Output {
            run: procroute::registry::RunId(1),
            chunk: "ERR x\n".into(),
        },
    );
    for o in out {
        if let Output::Append { records } = o {
            j.append(&records).expect("append");
        }
    }
    let (_, opened) = open(&fs).expect("reopen");
    // The match's notification is durable before it is sent; its send
    // (an attempt counted in memory) is persisted with its answer.
    let live = g.compact();
    assert!(opened.files[1] == live[1], "the checkpoint differs");
    let log = String::from_utf8_lossy(&opened.files[2]);
    assert!(
        log.contains("| ERR x") && log.contains("\"attempts\":0"),
        "{log}"
    );
}

#[test]
fn a_journal_left_behind_by_an_interrupted_compaction_is_skipped() {
    let fs = SimFs::new();
    let (mut g, mut j) = filled(&fs);
    let old_journal = bytes(&fs, "/gw/journal");
    j.compact(g.compact()).expect("compact");
    // The crash came after the new base, before the new journal.
    put(&fs, "/gw/journal", &old_journal);
    let (_, opened) = open(&fs).expect("a stale journal is expected after such a crash");
    assert!(opened.stale);
    same(&opened.files, &mut g);
}

#[test]
fn the_journal_compacts_when_it_outgrows_its_base() {
    let fs = SimFs::new();
    let c = config();
    let limits = JournalLimits {
        compact_min_bytes: 1024,
        compact_base_ratio: 2,
    };
    let (mut j, _) = JournalFiles::open("/gw", fs.clone(), limits, &c.limits, &c.delivery).unwrap();
    let mut g = Gateway::new(c);
    let mut compactions = 0;
    for i in 0..200u64 {
        let out = g.handle(
            i,
            Input::Spawn {
                origin: origin(),
                process_id: format!("p{i}"),
                command: "make".into(),
                watch_patterns: vec![],
                notify_on_exit: false,
            },
        );
        for o in out {
            if let Output::Append { records } = o {
                j.append(&records).unwrap();
            }
        }
        if j.wants_compaction() {
            j.compact(g.compact()).unwrap();
            compactions += 1;
        }
        // Bounded: never much past twice the base (or the minimum).
        let base = fs.len(Path::new("/gw/base")).unwrap().unwrap_or(0);
        assert!(
            j.journal_bytes() <= (2 * base).max(1024) + 4096,
            "journal {} base {base}",
            j.journal_bytes()
        );
    }
    assert!(compactions >= 3, "{compactions}");
    let (_, opened) = JournalFiles::open(
        "/gw",
        fs.clone(),
        limits,
        &config().limits,
        &config().delivery,
    )
    .unwrap();
    // The checkpoint was persisted at every spawn (the store only when its
    // lane was made: a lane's `updated_ms` is not worth a write).
    assert!(opened.files[1] == g.compact()[1], "the checkpoint differs");
}

#[test]
fn every_kind_of_record_reads_back() {
    // A whole image (what a recovered gateway appends first) and the
    // ordinary records, through the journal's payload encoding.
    let (mut g, _) = filled(&SimFs::new());
    let files = g.compact();
    for (of, bytes) in [
        procroute::gateway::FileKind::Store,
        procroute::gateway::FileKind::Checkpoint,
        procroute::gateway::FileKind::Delivery,
    ]
    .into_iter()
    .zip(files)
    {
        let r = Record::image(of, bytes);
        assert!(Record::decode(&r.encode()).expect("reads back") == r);
    }
    let mut g = Gateway::new(config());
    let out = g.handle(
        1,
        Input::Spawn {
            origin: origin(),
            process_id: "p".into(),
            command: "c".into(),
            watch_patterns: vec![],
            notify_on_exit: true,
        },
    );
    let records: Vec<Record> = out
        .into_iter()
        .flat_map(|o| match o {
            Output::Append { records } => records,
            _ => vec![],
        })
        .collect();
    assert!(records.len() >= 2, "{records:?}");
    for r in records {
        assert!(Record::decode(&r.encode()).expect("reads back") == r);
    }
}
