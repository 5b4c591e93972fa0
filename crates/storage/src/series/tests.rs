//! Hash-collision paths, which need the index's private maps to observe.

use roaring::RoaringBitmap;

use super::SeriesIndex;

/// 400,000 series make ~18 pairs whose 32-bit canonical hashes (and as many whose string
/// hashes) collide; `P(none)` is about 1e-8. Every series must keep its own id, and be found
/// again through the canonical map (new raw keys) after the collisions.
#[test]
fn colliding_32_bit_hashes_never_merge_series() {
    let n = 400_000u32;
    let mut index = SeriesIndex::new();
    let mut raw = String::new();
    for i in 0..n {
        let host = format!("h{i}");
        raw.clear();
        raw.push_str(&host);
        let got = index.get_or_create(0, raw.as_bytes(), &[("host", host.as_str())]);
        assert_eq!(got.ok(), Some((i, true)));
    }
    assert!(
        !index.canonical_overflow.is_empty(),
        "no canonical collision: raise n"
    );
    assert!(
        index.strings.collision_count() > 0,
        "no string collision: raise n"
    );
    for i in 0..n {
        let host = format!("h{i}");
        let other = format!("other spelling of {host}");
        let got = index.get_or_create(0, other.as_bytes(), &[("host", host.as_str())]);
        assert_eq!(got.ok(), Some((i, false)));
        let tags: Vec<_> = index.tags_of(i).into_iter().flatten().collect();
        assert_eq!(tags, vec![("host", host.as_str())]);
    }
    // Retiring the series that holds a colliding hash's canonical slot leaves its twin in
    // the overflow map findable (moved up), and retiring an overflow series leaves the
    // canonical holder alone.
    let twins: Vec<(u32, u32)> = index
        .canonical_overflow
        .iter()
        .map(|(key, &other)| (index.canonical[&index.seeds.canonical(key)], other))
        .collect();
    let (first, second) = (twins[0], twins.get(1).copied());
    let mut retire = RoaringBitmap::new();
    retire.insert(first.0);
    if let Some((_, overflow)) = second {
        retire.insert(overflow);
    }
    assert_eq!(index.retire(&retire).ok(), Some(retire.len() as usize));
    let find = |index: &mut SeriesIndex, i: u32| {
        let host = format!("h{i}");
        index
            .get_or_create(
                0,
                format!("third spelling of {host}").as_bytes(),
                &[("host", host.as_str())],
            )
            .ok()
    };
    assert_eq!(find(&mut index, first.1), Some((first.1, false)));
    if let Some((holder, overflow)) = second {
        assert_eq!(find(&mut index, holder), Some((holder, false)));
        assert_eq!(
            find(&mut index, overflow),
            Some((n, true)),
            "a retired series comes back new"
        );
    }
    assert_eq!(
        find(&mut index, first.0).map(|(_, created)| created),
        Some(true)
    );
}
