//! The memory a refused amplification patch costs (issue 8, finding 4), measured with `dhat`'s
//! heap profiler in testing mode as this test binary's global allocator.
//!
//! The reported body `add /x [64 chars]`, 23 x `copy /x -> /x/-`, `remove /x` is 1,198 bytes and
//! made the service allocate 1.3 GB. It must be refused with less than 10 MiB of heap growth, on
//! a flag and on a segment, whatever the number of copies.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use domain::flag::{Flag, NewFlag};
use domain::key::FlagKey;
use domain::patch::JsonPatchBody;
use domain::segment::{Segment, SegmentPost};
use domain::SequentialIds;
use serde_json::{json, Value};

#[global_allocator]
static ALLOC: dhat::Alloc = dhat::Alloc;

const TEN_MIB: usize = 10 << 20;

/// `add <at> [64 chars]`, `copies` x `copy <at> -> <at>/-`, `remove <at>`.
fn copy_chain(at: &str, copies: usize) -> Value {
    let mut body = vec![json!({"op": "add", "path": at, "value": ["a".repeat(64)]})];
    for _ in 0..copies {
        body.push(json!({"op": "copy", "from": at, "path": format!("{at}/-")}));
    }
    body.push(json!({"op": "remove", "path": at}));
    Value::Array(body)
}

/// Checks that `refuse` grows the heap by less than 10 MiB at its peak and returns an error
/// naming the limit.
fn assert_refused_cheaply<E: std::fmt::Display>(
    what: &str,
    refuse: impl FnOnce() -> Result<(), E>,
) {
    let before = dhat::HeapStats::get();
    let result = refuse();
    let after = dhat::HeapStats::get();
    let growth = after.max_bytes.saturating_sub(before.curr_bytes);
    eprintln!("{what}: peak heap growth {growth} bytes");
    assert!(growth < TEN_MIB, "{what}: the heap grew by {growth} bytes");
    let err = result.err().map(|e| e.to_string()).unwrap_or_default();
    assert!(
        err.contains("1048576 bytes"),
        "{what}: not refused at the limit: '{err}'"
    );
}

// One test: a process has one heap profiler.
#[test]
fn refused_amplification_patches_stay_under_10_mib() {
    let _profiler = dhat::Profiler::builder().testing().build();
    let mut ids = SequentialIds::default();
    let mut flag = Flag::create(
        NewFlag::boolean(FlagKey::parse("f").unwrap(), "F"),
        1,
        &mut ids,
    )
    .unwrap();
    for env in ["test", "production"] {
        let config = flag.new_config(env, 1, &mut ids);
        flag.environments.insert(env.to_owned(), config);
    }
    let segment = Segment::create(
        SegmentPost {
            key: "beta".into(),
            name: "Beta".into(),
            ..Default::default()
        },
        1,
        &mut ids,
    )
    .unwrap();

    // 18 copies would need 17 MiB; 23 is the reported body; 30 would need 70 GB.
    for copies in [18, 23, 30] {
        let body = copy_chain("/x", copies);
        if copies == 23 {
            // 1,198 bytes as reported (with spaces), 1,051 compact.
            assert_eq!(body.to_string().len(), 1051);
        }
        let ops = JsonPatchBody::parse(body).unwrap().operations;
        assert_refused_cheaply(&format!("flag, {copies} copies"), || {
            flag.apply_patch(&ops, 2, &mut ids).map(drop)
        });
        assert_refused_cheaply(&format!("segment, {copies} copies"), || {
            segment.apply_patch(&ops, 2, &mut ids).map(drop)
        });
    }
}
