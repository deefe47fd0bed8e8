//! The journal's framing and reader (`crates/procroute/src/journal.rs`): committed batches
//! read back exactly; a crash anywhere in the last batch (cut at any byte,
//! any part of it missing or garbage, in any order) is a torn tail that
//! loses nothing acknowledged; damage to an acknowledged batch is refused
//! as corruption, at every byte; hostile files get typed errors.

use procroute::journal::{self, Tail, HEADER_BYTES, MAX_FRAME_BYTES};
use procroute::persist::FileProblem;
use procroute_suite::gen::Rng;

/// A journal of `n` random batches; returns it, the payloads in order, and
/// where each batch starts.
fn journal(rng: &mut Rng, n: usize) -> (Vec<u8>, Vec<Vec<u8>>, Vec<usize>) {
    let mut bytes = journal::header();
    let mut all = Vec::new();
    let mut starts = Vec::new();
    for b in 0..n {
        let records: Vec<Vec<u8>> = (0..rng.below(4))
            .map(|_| (0..rng.below(40)).map(|_| rng.next_u64() as u8).collect())
            .collect();
        let refs: Vec<&[u8]> = records.iter().map(Vec::as_slice).collect();
        starts.push(bytes.len());
        bytes.extend(journal::batch(b as u64, &refs));
        all.extend(records);
    }
    (bytes, all, starts)
}

fn payloads(scan: &journal::Scan<'_>) -> Vec<Vec<u8>> {
    scan.records.iter().map(|r| r.to_vec()).collect()
}

#[test]
fn committed_batches_read_back_exactly() {
    let mut rng = Rng::new(1);
    for n in 0..40 {
        let (bytes, all, _) = journal(&mut rng, n);
        let scan = journal::scan(&bytes).expect("a valid journal");
        assert_eq!(payloads(&scan), all);
        assert_eq!(scan.batches, n as u64);
        assert_eq!((scan.valid_len, scan.tail), (bytes.len(), Tail::Clean));
    }
    assert_eq!(journal::scan(b"").expect("empty").tail, Tail::Clean);
}

#[test]
fn a_cut_at_any_byte_of_the_last_batch_is_a_torn_tail() {
    let mut rng = Rng::new(2);
    for _ in 0..20 {
        let (bytes, _, starts) = journal(&mut rng, 4);
        let last = starts[3];
        let before = journal::scan(&bytes[..last]).expect("three batches");
        for cut in last..bytes.len() {
            let scan = journal::scan(&bytes[..cut]).expect("a torn tail is not an error");
            assert_eq!(scan.records, before.records, "cut at {cut}");
            assert_eq!(scan.batches, 3);
            assert_eq!(scan.valid_len, last);
            match scan.tail {
                Tail::Clean => assert_eq!(cut, last),
                Tail::Torn { at, .. } => assert_eq!(at, last, "cut at {cut}"),
            }
        }
    }
    // A cut inside the header: an empty journal.
    let header = journal::header();
    for cut in 1..8 {
        let scan = journal::scan(&header[..cut]).expect("torn header");
        assert!(scan.records.is_empty());
        assert_eq!(
            scan.tail,
            Tail::Torn {
                at: 0,
                why: "a journal header cut short"
            }
        );
    }
}

/// Unsynced pages land in any order: any run of the last batch may be
/// missing (zeros) or garbage, its commit included or not. Nothing
/// acknowledged is lost, and it is never taken for corruption.
#[test]
fn the_last_batch_landing_in_any_order_is_a_torn_tail() {
    let mut rng = Rng::new(3);
    let mut checked = 0;
    for _ in 0..30 {
        let (bytes, _, starts) = journal(&mut rng, 3);
        let last = starts[2];
        let acknowledged = journal::scan(&bytes[..last]).expect("two batches");
        let len = bytes.len() - last;
        for page in (0..len).step_by(7) {
            for garbage in [false, true] {
                let mut torn = bytes.clone();
                for b in &mut torn[last + page..(last + page + 16).min(bytes.len())] {
                    *b = if garbage { rng.next_u64() as u8 } else { 0 };
                }
                let scan = journal::scan(&torn).expect("never corruption");
                if scan.batches == 3 {
                    // The damage missed every frame the batch is read from.
                    assert_eq!(torn[last..], bytes[last..]);
                    continue;
                }
                assert_eq!(scan.records, acknowledged.records);
                assert_eq!(scan.valid_len, last);
                assert!(matches!(scan.tail, Tail::Torn { at, .. } if at == last));
                checked += 1;
            }
        }
    }
    assert!(checked >= 400, "{checked} torn batches checked");
    eprintln!("{checked} torn last batches checked");
}

#[test]
fn damage_to_an_acknowledged_batch_is_corruption_at_every_byte() {
    let mut rng = Rng::new(4);
    let (bytes, _, starts) = journal(&mut rng, 3);
    for at in starts[1]..starts[2] {
        let mut bad = bytes.clone();
        bad[at] ^= 0x5a;
        match journal::scan(&bad) {
            Err(FileProblem::Corrupt { detail }) => {
                assert!(
                    detail.contains("not a torn tail") || detail.contains("commit"),
                    "{detail}"
                );
            }
            other => panic!("a flip at byte {at} gave {other:?}"),
        }
    }
}

#[test]
fn garbage_after_the_last_commit_is_a_torn_tail() {
    let mut rng = Rng::new(5);
    for _ in 0..200 {
        let (mut bytes, all, _) = journal(&mut rng, 3);
        let valid = bytes.len();
        let n = 1 + rng.below(300);
        bytes.extend((0..n).map(|_| rng.next_u64() as u8));
        let scan = journal::scan(&bytes).expect("a torn tail");
        assert_eq!(payloads(&scan), all);
        assert!(matches!(scan.tail, Tail::Torn { at, .. } if at == valid));
    }
}

#[test]
fn hostile_files_get_typed_errors() {
    // Not a journal at all.
    match journal::scan(b"{\"format\":\"procroute.store\"}") {
        Err(FileProblem::WrongFormat { found, expected }) => {
            assert_eq!(expected, "PRJRNL01");
            assert!(found.starts_with("{\\\"format"), "{found}");
        }
        other => panic!("{other:?}"),
    }
    // A length field of 4 GiB at the end: no allocation, a torn tail.
    let mut bytes = journal::header();
    bytes.extend(journal::batch(0, &[b"a"]));
    let valid = bytes.len();
    bytes.extend(u32::MAX.to_le_bytes());
    bytes.extend([0u8; 12]);
    let scan = journal::scan(&bytes).expect("torn");
    assert_eq!(
        scan.tail,
        Tail::Torn {
            at: valid,
            why: "a frame length out of range"
        }
    );
    // A batch whose commit counts another number of records.
    let one = journal::batch(0, &[b"a", b"b"]);
    let first_frame = HEADER_BYTES + 2;
    let mut spliced = journal::header();
    spliced.extend(&one[first_frame..]);
    match journal::scan(&spliced) {
        Err(FileProblem::Corrupt { detail }) => {
            assert!(detail.contains("batch 0 of 2 records"), "{detail}")
        }
        other => panic!("{other:?}"),
    }
    // Batches out of sequence.
    let mut skipped = journal::header();
    skipped.extend(journal::batch(0, &[b"a"]));
    skipped.extend(journal::batch(2, &[b"b"]));
    assert!(matches!(
        journal::scan(&skipped),
        Err(FileProblem::Corrupt { .. })
    ));
    // One byte over the frame limit, the rest of the frame present: refused
    // as a frame (a torn tail), never read.
    let mut over = journal::header();
    over.extend(((MAX_FRAME_BYTES + 1) as u32).to_le_bytes());
    over.extend(vec![0u8; MAX_FRAME_BYTES + 5]);
    assert_eq!(
        journal::scan(&over).expect("torn").tail,
        Tail::Torn {
            at: 8,
            why: "a frame length out of range"
        }
    );
}

#[test]
fn a_batch_built_in_place_is_the_same_bytes() {
    let payloads: Vec<Vec<u8>> = (0..50u8).map(|i| vec![i; usize::from(i) * 7]).collect();
    let refs: Vec<&[u8]> = payloads.iter().map(Vec::as_slice).collect();
    let mut w = journal::BatchWriter::new();
    fill(&mut w, &payloads);
    assert_eq!(w.len(), 50);
    assert_eq!(w.finish(3), journal::batch(3, &refs));
}

/// A compaction writes its base as parts (the images where they are, the
/// framing between them): joined, they are the batch's bytes, for no
/// payloads, empty ones and large ones, and the result reads back.
#[test]
fn a_batch_written_in_parts_is_the_same_bytes() {
    let mut rng = Rng::new(7);
    for n in [0usize, 1, 2, 3, 9] {
        let bodies: Vec<Vec<u8>> = (0..n)
            .map(|i| {
                let len = [0, 1, 100, 70_000][(i + n) % 4];
                (0..len).map(|_| rng.next_u64() as u8).collect()
            })
            .collect();
        let refs: Vec<&[u8]> = bodies.iter().map(Vec::as_slice).collect();
        for number in [0, n as u64 * 11 + 1] {
            let mut heads = vec![0xAA; 5]; // what it held before is dropped
            let parts = journal::batch_parts(number, &refs, &mut heads);
            assert_eq!(parts.len(), 2 * n + 1);
            assert_eq!(
                parts.concat(),
                journal::batch(number, &refs),
                "{n} payloads"
            );
        }
        // A base: the header, then batch 0 in parts.
        let mut heads = Vec::new();
        let mut file = journal::header();
        file.extend(journal::batch_parts(0, &refs, &mut heads).concat());
        assert_eq!(payloads(&journal::scan(&file).expect("reads back")), bodies);
    }
}

/// Encodes each payload as one record of `w`, in place.
fn fill(w: &mut journal::BatchWriter, payloads: &[Vec<u8>]) {
    for p in payloads {
        w.record(|out| {
            out.extend_from_slice(p);
            Ok::<(), ()>(())
        })
        .expect("writing into memory cannot fail")
        .expect("each payload fits a frame");
    }
}

/// A writer reused across group commits (`commit`, then `clear`) gives
/// each batch exactly the bytes a fresh one would: nothing of the previous
/// batch leaks into the next, and its record count starts again at 0.
#[test]
fn a_reused_batch_writer_starts_each_batch_afresh() {
    let mut w = journal::BatchWriter::new();
    for (number, n) in [(0u64, 40u8), (1, 3), (2, 0), (3, 17)] {
        w.clear();
        let payloads: Vec<Vec<u8>> = (0..n).map(|i| vec![i ^ n; usize::from(i) * 5]).collect();
        fill(&mut w, &payloads);
        assert_eq!(w.len(), u32::from(n));
        let refs: Vec<&[u8]> = payloads.iter().map(Vec::as_slice).collect();
        assert_eq!(w.commit(number), journal::batch(number, &refs).as_slice());
    }
}
