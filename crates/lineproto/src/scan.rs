//! Byte classes, delimiter scanning and unescaping shared by the parser.
//!
//! Each part of a line stops at a different set of bytes. One 256-entry table holds
//! a bit per part, so finding the end of a part is one load and one mask per byte
//! instead of a chain of comparisons.

use std::borrow::Cow;

/// Bytes that end (or escape within) the measurement: `,` space `\`.
pub(crate) const MEASUREMENT: u8 = 1;
/// Bytes that end (or escape within) a tag key: `,` `=` space `\`.
pub(crate) const TAG_KEY: u8 = 2;
/// Bytes that end a tag value: `,` space `\`, and `=` which is an error there.
pub(crate) const TAG_VALUE: u8 = 4;
/// Bytes that end a field key: `,` `=` space `\`.
pub(crate) const FIELD_KEY: u8 = 8;
/// Bytes that end an unquoted field value: `,` space. No escapes exist there.
pub(crate) const FIELD_VALUE: u8 = 16;
/// Bytes that end (or escape within) a quoted string: `"` `\`.
pub(crate) const STRING: u8 = 32;

static CLASS: [u8; 256] = build_class();

const fn build_class() -> [u8; 256] {
    let mut t = [0u8; 256];
    t[b',' as usize] = MEASUREMENT | TAG_KEY | TAG_VALUE | FIELD_KEY | FIELD_VALUE;
    t[b' ' as usize] = MEASUREMENT | TAG_KEY | TAG_VALUE | FIELD_KEY | FIELD_VALUE;
    t[b'=' as usize] = TAG_KEY | TAG_VALUE | FIELD_KEY;
    t[b'\\' as usize] = MEASUREMENT | TAG_KEY | TAG_VALUE | FIELD_KEY | STRING;
    t[b'"' as usize] = STRING;
    t
}

/// Returns the index of the first byte at or after `start` in class `mask` that is
/// not escaped, or `b.len()`; and whether a backslash was seen (so the part may
/// need unescaping). A backslash always hides the byte after it from the scan, which
/// is what makes `\,` `\ ` `\=` `\"` and `\\` work; whether the backslash is then
/// removed is decided by [`unescape`].
#[inline(always)]
pub(crate) fn scan(b: &[u8], start: usize, mask: u8) -> (usize, bool) {
    let mut i = start;
    let mut escaped = false;
    while i < b.len() {
        let c = b[i];
        if CLASS[c as usize] & mask != 0 {
            if c != b'\\' {
                return (i, escaped);
            }
            escaped = true;
            i += 2;
            continue;
        }
        i += 1;
    }
    (b.len(), escaped)
}

/// The characters a backslash escapes in the measurement.
pub(crate) const MEASUREMENT_ESCAPES: &[u8] = b", \\";
/// The characters a backslash escapes in tag keys, tag values and field keys.
pub(crate) const KEY_ESCAPES: &[u8] = b",= \\";
/// The characters a backslash escapes in string field values.
pub(crate) const STRING_ESCAPES: &[u8] = b"\"\\";

/// Borrows `s` when it has no backslash, otherwise removes the backslash before
/// every character in `escapes`. A backslash before any other character (or at the
/// end) is kept, as InfluxDB documents: `\\` is one backslash, `\d` is two bytes.
#[inline]
pub(crate) fn unescape<'a>(s: &'a str, has_backslash: bool, escapes: &[u8]) -> Cow<'a, str> {
    if !has_backslash {
        return Cow::Borrowed(s);
    }
    let b = s.as_bytes();
    let mut out = String::with_capacity(s.len());
    let mut last = 0;
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 1 < b.len() && escapes.contains(&b[i + 1]) {
            // Both positions are ASCII, so slicing at them stays on char boundaries.
            out.push_str(&s[last..i]);
            last = i + 1;
            i += 2;
        } else {
            i += 1;
        }
    }
    out.push_str(&s[last..]);
    Cow::Owned(out)
}
