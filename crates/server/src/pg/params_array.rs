//! Array parameters (`WHERE host = ANY($1)` with a list bound to `$1`, as psycopg sends a
//! Python list and pgjdbc a `java.sql.Array`) as `make_array(…)` of their elements'
//! literals, each element checked against the element type as any parameter is
//! (`params::literal`).
//!
//! - Text, as Postgres's `array_in` reads one dimension: `{a,"b c",NULL}`, white space
//!   around elements ignored, `"` quoting with `\` escapes, `\` escaping outside quotes
//!   too, and an unquoted `NULL` (any case) for SQL NULL.
//! - Binary, as `array_send` writes it: dimensions (0 or 1), the NULL flag, the element
//!   type's oid, the length and lower bound, then each element as a length (-1 for NULL)
//!   and its binary value.
//!
//! Arrays of more than one dimension, or with explicit bounds (`[0:1]={…}`), are refused
//! with `feature_not_supported`.

use pgwire::api::Type;
use pgwire::error::PgWireError;

use super::errors::{INVALID_TEXT, NOT_SUPPORTED, error};
use super::params::literal;

/// The most elements an array parameter may have: each becomes an argument of one
/// `make_array` call that the planner reads.
const MAX_ELEMENTS: usize = 100_000;

/// The literal of an array parameter of `element`s, sent as text or binary.
pub(super) fn array_literal(
    bytes: &[u8],
    element: &Type,
    binary: bool,
) -> Result<String, PgWireError> {
    let elements = if binary {
        binary_elements(bytes)?
            .into_iter()
            .map(|value| literal(value, element, true))
            .collect::<Result<Vec<_>, _>>()?
    } else {
        let text = std::str::from_utf8(bytes)
            .map_err(|_| error("22021", "a parameter is not valid UTF-8"))?;
        text_elements(text)?
            .into_iter()
            .map(|value| literal(value.as_deref().map(str::as_bytes), element, false))
            .collect::<Result<Vec<_>, _>>()?
    };
    if elements.is_empty() {
        return Ok(format!(
            "arrow_cast(make_array(), 'List({})')",
            arrow_type(element)
        ));
    }
    Ok(format!("make_array({})", elements.join(", ")))
}

/// The Arrow type an empty array of `element` is typed as, so that it compares with the
/// column it meets.
fn arrow_type(element: &Type) -> &'static str {
    match *element {
        Type::BOOL => "Boolean",
        Type::INT2 | Type::INT4 | Type::INT8 | Type::OID => "Int64",
        Type::FLOAT4 | Type::FLOAT8 | Type::NUMERIC => "Float64",
        Type::TIMESTAMP | Type::TIMESTAMPTZ => "Timestamp(Nanosecond, None)",
        Type::DATE => "Date32",
        _ => "Utf8",
    }
}

fn malformed(text: &str, why: &str) -> PgWireError {
    error(
        INVALID_TEXT,
        format!("malformed array literal: {text:?}: {why}"),
    )
}

/// The elements of a one-dimensional array in `array_in`'s text form; `None` for NULL.
fn text_elements(text: &str) -> Result<Vec<Option<String>>, PgWireError> {
    let body = text.trim_start();
    if body.starts_with('[') {
        return Err(error(
            NOT_SUPPORTED,
            "array parameters with explicit bounds ([lower:upper]=...) are not supported",
        ));
    }
    let Some(body) = body.strip_prefix('{') else {
        return Err(malformed(text, "it must start with \"{\""));
    };
    let mut chars = body.chars().peekable();
    let mut elements = Vec::new();
    loop {
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        if elements.is_empty() && chars.next_if_eq(&'}').is_some() {
            break;
        }
        let mut value = String::new();
        let mut quoted = false;
        let mut escaped_any = false;
        match chars.peek() {
            Some('{') => {
                return Err(error(
                    NOT_SUPPORTED,
                    "array parameters of more than one dimension are not supported",
                ));
            }
            Some('"') => {
                chars.next();
                quoted = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(c) => value.push(c),
                            None => return Err(malformed(text, "it ends after \"\\\"")),
                        },
                        Some(c) => value.push(c),
                        None => return Err(malformed(text, "a quoted element is not closed")),
                    }
                }
                while chars.next_if(|c| c.is_whitespace()).is_some() {}
            }
            _ => {
                // Up to the next `,` or `}`; trailing white space is not the element's.
                let mut kept = 0;
                loop {
                    match chars.peek() {
                        Some(',' | '}') | None => break,
                        Some('"' | '{') => {
                            return Err(malformed(text, "unexpected quote or brace in an element"));
                        }
                        Some('\\') => {
                            chars.next();
                            match chars.next() {
                                Some(c) => value.push(c),
                                None => return Err(malformed(text, "it ends after \"\\\"")),
                            }
                            escaped_any = true;
                            kept = value.len();
                        }
                        Some(&c) => {
                            chars.next();
                            value.push(c);
                            if !c.is_whitespace() {
                                kept = value.len();
                            }
                        }
                    }
                }
                value.truncate(kept);
                if value.is_empty() {
                    return Err(malformed(text, "an element is empty"));
                }
            }
        }
        let null = !quoted && !escaped_any && value.eq_ignore_ascii_case("NULL");
        elements.push((!null).then_some(value));
        if elements.len() > MAX_ELEMENTS {
            return Err(error(
                "54000",
                format!("an array parameter has more than {MAX_ELEMENTS} elements"),
            ));
        }
        match chars.next() {
            Some(',') => continue,
            Some('}') => break,
            _ => return Err(malformed(text, "expected \",\" or \"}\" after an element")),
        }
    }
    if chars.any(|c| !c.is_whitespace()) {
        return Err(malformed(text, "junk after the closing \"}\""));
    }
    Ok(elements)
}

/// The elements of a binary array (`array_send`); `None` for NULL.
fn binary_elements(bytes: &[u8]) -> Result<Vec<Option<&[u8]>>, PgWireError> {
    let bad = |why: &str| {
        error(
            INVALID_TEXT,
            format!("a binary array parameter is malformed: {why}"),
        )
    };
    let mut rest = bytes;
    let word = |rest: &mut &[u8]| -> Result<i32, PgWireError> {
        let (head, tail) = rest
            .split_first_chunk::<4>()
            .ok_or_else(|| bad("it is cut short"))?;
        *rest = tail;
        Ok(i32::from_be_bytes(*head))
    };
    let dimensions = word(&mut rest)?;
    let _has_null = word(&mut rest)?;
    let _element_oid = word(&mut rest)?;
    let count = match dimensions {
        0 => 0,
        1 => {
            let length = word(&mut rest)?;
            let _lower_bound = word(&mut rest)?;
            usize::try_from(length).map_err(|_| bad("a negative length"))?
        }
        n if n > 1 => {
            return Err(error(
                NOT_SUPPORTED,
                "array parameters of more than one dimension are not supported",
            ));
        }
        _ => return Err(bad("a negative number of dimensions")),
    };
    if count > MAX_ELEMENTS {
        return Err(error(
            "54000",
            format!("an array parameter has more than {MAX_ELEMENTS} elements"),
        ));
    }
    let mut elements = Vec::with_capacity(count);
    for _ in 0..count {
        let length = word(&mut rest)?;
        if length < 0 {
            elements.push(None);
            continue;
        }
        let length = length as usize;
        if rest.len() < length {
            return Err(bad("an element is cut short"));
        }
        let (value, tail) = rest.split_at(length);
        elements.push(Some(value));
        rest = tail;
    }
    if !rest.is_empty() {
        return Err(bad("bytes after its last element"));
    }
    Ok(elements)
}

#[cfg(test)]
mod tests {
    use pgwire::api::Type;

    use super::{array_literal, text_elements};

    fn text(sql: &str, element: &Type) -> String {
        array_literal(sql.as_bytes(), element, false).expect("valid")
    }

    #[test]
    fn text_arrays_read_as_array_in_reads_them() {
        assert_eq!(
            text(r#"{a, "b c" ,NULL,"NULL",x\,y, "q\"\\"}"#, &Type::TEXT),
            r#"make_array('a', 'b c', NULL, 'NULL', 'x,y', 'q"\')"#
        );
        assert_eq!(text("{1,-2, 3 }", &Type::INT8), "make_array(1, (-2), 3)");
        assert_eq!(
            text(" {} ", &Type::INT8),
            "arrow_cast(make_array(), 'List(Int64)')"
        );
        assert_eq!(
            text("{}", &Type::TEXT),
            "arrow_cast(make_array(), 'List(Utf8)')"
        );
        assert_eq!(text("{it's}", &Type::TEXT), "make_array('it''s')");
        assert_eq!(
            text_elements(r#"{"",a b}"#).unwrap(),
            [Some(String::new()), Some("a b".to_owned())]
        );
        for (bad, why) in [
            ("a,b", "must start"),
            ("{a", "expected"),
            ("{a,}", "empty"),
            ("{\"a}", "not closed"),
            ("{a} x", "junk"),
            ("{a\"b}", "unexpected"),
            ("{1,x}", "invalid input syntax for type integer"),
            ("{{1},{2}}", "more than one dimension"),
            ("[0:1]={1,2}", "explicit bounds"),
        ] {
            let err = array_literal(bad.as_bytes(), &Type::INT8, false)
                .expect_err(bad)
                .to_string();
            assert!(err.contains(why), "{bad}: {err}");
        }
    }

    fn binary(words: &[i32], tail: &[u8]) -> Vec<u8> {
        let mut bytes: Vec<u8> = words.iter().flat_map(|w| w.to_be_bytes()).collect();
        bytes.extend_from_slice(tail);
        bytes
    }

    #[test]
    fn binary_arrays_read_as_array_send_writes_them() {
        let mut elements = Vec::new();
        elements.extend_from_slice(&8i32.to_be_bytes());
        elements.extend_from_slice(&(-5i64).to_be_bytes());
        elements.extend_from_slice(&(-1i32).to_be_bytes());
        let ints = binary(&[1, 1, 20, 2, 1], &elements);
        assert_eq!(
            array_literal(&ints, &Type::INT8, true).unwrap(),
            "make_array((-5), NULL)"
        );
        let texts = binary(&[1, 0, 25, 1, 1, 3], b"a'b");
        assert_eq!(
            array_literal(&texts, &Type::TEXT, true).unwrap(),
            "make_array('a''b')"
        );
        let empty = binary(&[0, 0, 25], b"");
        assert_eq!(
            array_literal(&empty, &Type::TEXT, true).unwrap(),
            "arrow_cast(make_array(), 'List(Utf8)')"
        );
        for (bad, why) in [
            (binary(&[1, 0, 25, 2, 1, 1], b"a"), "cut short"),
            (binary(&[1, 0, 25, 1, 1, 5], b"ab"), "cut short"),
            (binary(&[1, 0, 25, 0, 1], b"x"), "after its last element"),
            (
                binary(&[2, 0, 25, 1, 1, 1, 1], b""),
                "more than one dimension",
            ),
            (binary(&[1, 0, 25, -1, 1], b""), "negative length"),
            (binary(&[1, 0, 25, 1_000_000, 1], b""), "more than 100000"),
        ] {
            let err = array_literal(&bad, &Type::TEXT, true)
                .expect_err(why)
                .to_string();
            assert!(err.contains(why), "{why}: {err}");
        }
    }
}
