//! The encoding tags: byte 0 of every block. Numbers are part of the on-disk format:
//! never reuse or renumber one; add new encodings with new numbers.

/// Column type a block belongs to; used to reject a block of the wrong type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColumnType {
    /// i64 nanoseconds since the Unix epoch.
    Timestamp,
    /// f64.
    Float,
    /// i64.
    Integer,
    /// u64.
    Unsigned,
    /// bool.
    Boolean,
    /// UTF-8 strings.
    String,
}

impl ColumnType {
    /// Lower-case name used in error messages.
    pub const fn name(self) -> &'static str {
        match self {
            ColumnType::Timestamp => "timestamp",
            ColumnType::Float => "float",
            ColumnType::Integer => "integer",
            ColumnType::Unsigned => "unsigned",
            ColumnType::Boolean => "boolean",
            ColumnType::String => "string",
        }
    }
}

/// Every block encoding, with its tag number (byte 0 of the block).
///
/// Tags are grouped by column type in decades so that each column type can grow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Encoding {
    /// Timestamps `first + i * step`, stored divided by a power of ten.
    TimestampRegular = 1,
    /// Timestamps as zig-zag delta-of-delta, bit-packed in frames.
    TimestampDeltaOfDelta = 2,
    /// Integers all equal.
    IntegerConstant = 10,
    /// Integers `first + i * step`.
    IntegerStep = 11,
    /// Integers as zig-zag deltas, bit-packed in frames.
    IntegerDeltaPacked = 12,
    /// Integers as zig-zag deltas, rANS-coded with a static table.
    IntegerDeltaRans = 13,
    /// Unsigned all equal.
    UnsignedConstant = 20,
    /// Unsigned `first + i * step` (wrapping).
    UnsignedStep = 21,
    /// Unsigned as zig-zag wrapping deltas, bit-packed in frames.
    UnsignedDeltaPacked = 22,
    /// Unsigned as zig-zag wrapping deltas, rANS-coded with a static table.
    UnsignedDeltaRans = 23,
    /// Floats that are all decimals: `mantissa / 10^exponent`, mantissas as an integer payload.
    FloatDecimal = 30,
    /// Floats compressed by pco (pcodec) standalone, bit-exact.
    FloatPco = 31,
    /// Booleans all equal.
    BooleanConstant = 40,
    /// Booleans one bit each.
    BooleanPacked = 41,
    /// Strings as length-prefixed bytes.
    StringRaw = 50,
    /// Strings as a dictionary of distinct values plus bit-packed indexes.
    StringDictionary = 51,
    /// A `StringRaw` or `StringDictionary` payload compressed with zstd.
    StringZstd = 52,
}

impl Encoding {
    /// Every encoding, in tag order.
    pub const ALL: [Encoding; 17] = [
        Encoding::TimestampRegular,
        Encoding::TimestampDeltaOfDelta,
        Encoding::IntegerConstant,
        Encoding::IntegerStep,
        Encoding::IntegerDeltaPacked,
        Encoding::IntegerDeltaRans,
        Encoding::UnsignedConstant,
        Encoding::UnsignedStep,
        Encoding::UnsignedDeltaPacked,
        Encoding::UnsignedDeltaRans,
        Encoding::FloatDecimal,
        Encoding::FloatPco,
        Encoding::BooleanConstant,
        Encoding::BooleanPacked,
        Encoding::StringRaw,
        Encoding::StringDictionary,
        Encoding::StringZstd,
    ];

    /// The tag byte.
    pub const fn tag(self) -> u8 {
        self as u8
    }

    /// The encoding with tag `tag`, if any.
    pub fn from_tag(tag: u8) -> Option<Encoding> {
        Encoding::ALL.iter().copied().find(|e| e.tag() == tag)
    }

    /// The column type whose blocks may use this encoding.
    pub const fn column_type(self) -> ColumnType {
        match self {
            Encoding::TimestampRegular | Encoding::TimestampDeltaOfDelta => ColumnType::Timestamp,
            Encoding::IntegerConstant
            | Encoding::IntegerStep
            | Encoding::IntegerDeltaPacked
            | Encoding::IntegerDeltaRans => ColumnType::Integer,
            Encoding::UnsignedConstant
            | Encoding::UnsignedStep
            | Encoding::UnsignedDeltaPacked
            | Encoding::UnsignedDeltaRans => ColumnType::Unsigned,
            Encoding::FloatDecimal | Encoding::FloatPco => ColumnType::Float,
            Encoding::BooleanConstant | Encoding::BooleanPacked => ColumnType::Boolean,
            Encoding::StringRaw | Encoding::StringDictionary | Encoding::StringZstd => {
                ColumnType::String
            }
        }
    }
}
