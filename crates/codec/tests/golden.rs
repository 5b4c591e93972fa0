//! Golden byte vectors: the exact bytes of small blocks of every encoding, so that any
//! format change is noticed. Each case also decodes its bytes back to the input.
//! The `FloatPco` and `StringZstd` vectors are pco 1.1.0 / zstd 1.5 output: a library
//! upgrade may change the bytes the encoder writes (old bytes must still decode).

mod common;

use common::{bits, hex};
use strata_codec::{Encoding, boolean, float, integer, peek_header, string, timestamp, unsigned};

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("golden vectors are hex"))
        .collect()
}

fn small_walk() -> Vec<i64> {
    [0i64, 1, 0, -1, 0, 0, 1, -1, 1, 0]
        .iter()
        .cycle()
        .take(200)
        .scan(0i64, |a, d| {
            *a += d;
            Some(*a)
        })
        .collect()
}

#[test]
fn timestamp_golden() {
    let cases: [(&[i64], &str, Encoding); 3] = [
        // tag 01, count 3, e = 9, first/1e9 = 1 -> zz 2, step/1e9 = 1 -> zz 2
        (
            &[1_000_000_000, 2_000_000_000, 3_000_000_000],
            "0103090202",
            Encoding::TimestampRegular,
        ),
        // tag 02, count 4, e = 1, u = [10, 20, 35, 40]: zz(10) = 0x14, zz(10) = 0x14,
        // dods 5, -10 -> zz 10, 19 in one frame of width 5: 0x6a 0x02
        (
            &[100, 200, 350, 400],
            "0204011414056a02",
            Encoding::TimestampDeltaOfDelta,
        ),
        (&[], "0100", Encoding::TimestampRegular),
    ];
    for (v, want, enc) in cases {
        let mut b = vec![];
        timestamp::encode(v, &mut b);
        assert_eq!(hex(&b), want, "{v:?}");
        assert_eq!(peek_header(&b), Ok((enc, v.len())));
        let mut out = vec![];
        assert_eq!(timestamp::decode(&unhex(want), &mut out), Ok(b.len()));
        assert_eq!(out, v);
    }
}

#[test]
fn integer_golden() {
    let walk = small_walk();
    // count 200 = c8 01; 8b = table 11 | 0x80 (first value 0 rides in state A); state A
    // 0x02a40f06, state B 0x10435606 (LE); then the renormalisation bytes.
    let rans = "0dc8018b060fa40206564310130b8accd83fba8ebc71fe07ece67c57b520aac1eb746c24fb282d1044283930ccda6661fe".to_string();
    let cases: Vec<(&[i64], String, Encoding)> = vec![
        (&[7, 7, 7], "0a030e".into(), Encoding::IntegerConstant),
        (&[5, 8, 11], "0b030a06".into(), Encoding::IntegerStep),
        // first zz(1) = 2; deltas -2, 101, -100 -> zz 3, 202, 199; one frame of width 8
        (
            &[1, -1, 100, 0],
            "0c04020803cac7".into(),
            Encoding::IntegerDeltaPacked,
        ),
        (&walk, rans, Encoding::IntegerDeltaRans),
    ];
    for (v, want, enc) in cases {
        let mut b = vec![];
        integer::encode(v, &mut b);
        assert_eq!(hex(&b), want, "{v:?}");
        assert_eq!(peek_header(&b), Ok((enc, v.len())));
        let mut out = vec![];
        assert_eq!(integer::decode(&unhex(&want), &mut out), Ok(b.len()));
        assert_eq!(out, v);
    }
}

#[test]
fn unsigned_golden() {
    let walk: Vec<u64> = small_walk().iter().map(|&x| (x + 10) as u64).collect();
    // Same deltas as the integer case; only the first value (10 -> zz 20, in state A) and
    // so the last renormalisation bytes differ.
    let rans = "17c8018b060fa40206564310130b8accd83fba8ebc71fe07ece67c57b520aac1eb746c24fb282d1044283930ccda666212".to_string();
    let cases: Vec<(&[u64], String, Encoding)> = vec![
        (&[9, 9], "140212".into(), Encoding::UnsignedConstant),
        // u64::MAX is -1 as i64 -> zz 1; wrapping step 1 -> zz 2
        (&[u64::MAX, 0, 1], "15030102".into(), Encoding::UnsignedStep),
        (
            &[0, u64::MAX, 5],
            "16030004c1".into(),
            Encoding::UnsignedDeltaPacked,
        ),
        (&walk, rans, Encoding::UnsignedDeltaRans),
    ];
    for (v, want, enc) in cases {
        let mut b = vec![];
        unsigned::encode(v, &mut b);
        assert_eq!(hex(&b), want, "{v:?}");
        assert_eq!(peek_header(&b), Ok((enc, v.len())));
        let mut out = vec![];
        assert_eq!(unsigned::decode(&unhex(&want), &mut out), Ok(b.len()));
        assert_eq!(out, v);
    }
}

#[test]
fn float_golden() {
    let pco = "1f032f70636f210300c1040106020000003200e8ffffffffffffff0f00000000000000fe2f00000000000000fc7f00090000";
    let cases: [(&[f64], &str, Encoding); 3] = [
        // e = 1, inner tag 0c, mantissas 103, 104, 103: zz(103) = ce 01, deltas zz 2, 1 in
        // one frame of width 2: 0x06
        (
            &[10.3, 10.4, 10.3],
            "1e03010cce010206",
            Encoding::FloatDecimal,
        ),
        // NaN and -0.0 never qualify as decimals: pco, length 0x2f = 47 bytes
        (&[f64::NAN, 1.5, -0.0], pco, Encoding::FloatPco),
        (&[], "1e00", Encoding::FloatDecimal),
    ];
    for (v, want, enc) in cases {
        let mut b = vec![];
        float::encode(v, &mut b);
        assert_eq!(hex(&b), want, "{v:?}");
        assert_eq!(peek_header(&b), Ok((enc, v.len())));
        let mut out = vec![];
        assert_eq!(float::decode(&unhex(want), &mut out), Ok(b.len()));
        assert_eq!(bits(&out), bits(v));
    }
}

#[test]
fn boolean_golden() {
    let cases: [(&[bool], &str, Encoding); 3] = [
        (&[true, true], "280201", Encoding::BooleanConstant),
        (&[true, false, true], "290305", Encoding::BooleanPacked),
        (&[], "2800", Encoding::BooleanConstant),
    ];
    for (v, want, enc) in cases {
        let mut b = vec![];
        boolean::encode(v, &mut b);
        assert_eq!(hex(&b), want, "{v:?}");
        assert_eq!(peek_header(&b), Ok((enc, v.len())));
        let mut out = vec![];
        assert_eq!(boolean::decode(&unhex(want), &mut out), Ok(b.len()));
        assert_eq!(out, v);
    }
}

#[test]
fn string_golden() {
    let hosts: Vec<String> = (0..40).map(|i| format!("host_{}", i % 7)).collect();
    let fox: Vec<String> = (0..10)
        .map(|i| format!("the quick brown fox number {i}"))
        .collect();
    let cases: Vec<(Vec<String>, &str, Encoding)> = vec![
        (
            vec!["a".into(), "bc".into()],
            "32020161026263",
            Encoding::StringRaw,
        ),
        // d = 2: "x", "y"; indexes 0,0,0,1 at 1 bit: 0x08
        (
            vec!["x".into(), "x".into(), "x".into(), "y".into()],
            "3304020178017908",
            Encoding::StringDictionary,
        ),
        // count 0x28, inner tag 33 (dictionary), raw_len 0x41, zlen 0x32, zstd frame
        (
            hosts,
            "342833413228b52ffd20414d0100e80706686f73745f3031323334353688c61ad158231a6b44638d68ac118d06040340c00106045c152e",
            Encoding::StringZstd,
        ),
        // count 0x0a, inner tag 32 (raw), raw_len 0x122 (a2 02), zlen 0x41
        (
            fox,
            "340a32a2024128b52ffd602200bd010064021c74686520717569636b2062726f776e20666f78206e756d626572203031323334353637383909041940c00106041c6040c00d2827",
            Encoding::StringZstd,
        ),
        (vec![], "3200", Encoding::StringRaw),
    ];
    for (v, want, enc) in cases {
        let mut b = vec![];
        string::encode(&v, &mut b);
        assert_eq!(hex(&b), want, "{v:?}");
        assert_eq!(peek_header(&b), Ok((enc, v.len())));
        let mut out = vec![];
        assert_eq!(string::decode(&unhex(want), &mut out), Ok(b.len()));
        assert_eq!(out, v);
    }
}

#[test]
fn tag_numbers_are_fixed() {
    let tags: Vec<(Encoding, u8)> = Encoding::ALL.iter().map(|&e| (e, e.tag())).collect();
    let want = [
        1, 2, 10, 11, 12, 13, 20, 21, 22, 23, 30, 31, 40, 41, 50, 51, 52,
    ];
    assert_eq!(tags.iter().map(|t| t.1).collect::<Vec<_>>(), want);
    for (e, t) in tags {
        assert_eq!(Encoding::from_tag(t), Some(e));
    }
    let known: Vec<u8> = want.to_vec();
    for t in 0..=255u8 {
        assert_eq!(
            Encoding::from_tag(t).is_some(),
            known.contains(&t),
            "tag {t}"
        );
    }
}
