//! The data model shared by every part of the engine: ids, field types and values.

use std::fmt;

/// A series within one shard: dense, assigned in creation order from 0.
pub type SeriesId = u32;

/// A table within the catalog: dense, assigned in creation order from 0, never reused.
pub type TableId = u32;

/// A field (value column) within one table: dense per table, from 0, never reused.
pub type FieldId = u32;

/// Nanoseconds since the Unix epoch.
pub type Timestamp = i64;

/// The type of a field column. The numbers are written to disk: never change or reuse one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum FieldType {
    /// 64-bit IEEE float.
    Float = 1,
    /// Signed 64-bit integer.
    Integer = 2,
    /// Unsigned 64-bit integer.
    Unsigned = 3,
    /// Boolean.
    Boolean = 4,
    /// UTF-8 string.
    String = 5,
}

impl FieldType {
    /// The type with on-disk number `tag`, if there is one.
    pub fn from_tag(tag: u8) -> Option<Self> {
        Some(match tag {
            1 => Self::Float,
            2 => Self::Integer,
            3 => Self::Unsigned,
            4 => Self::Boolean,
            5 => Self::String,
            _ => return None,
        })
    }

    /// The name used in messages and SQL (`float`, `integer`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Self::Float => "float",
            Self::Integer => "integer",
            Self::Unsigned => "unsigned",
            Self::Boolean => "boolean",
            Self::String => "string",
        }
    }
}

impl fmt::Display for FieldType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One field value, owned.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// A float.
    Float(f64),
    /// A signed integer.
    Integer(i64),
    /// An unsigned integer.
    Unsigned(u64),
    /// A boolean.
    Boolean(bool),
    /// A string.
    String(String),
}

impl Value {
    /// The type of this value.
    pub fn field_type(&self) -> FieldType {
        match self {
            Self::Float(_) => FieldType::Float,
            Self::Integer(_) => FieldType::Integer,
            Self::Unsigned(_) => FieldType::Unsigned,
            Self::Boolean(_) => FieldType::Boolean,
            Self::String(_) => FieldType::String,
        }
    }
}
