//! Postgres's hash functions: `md5(text)` is the digest as 32 hexadecimal digits;
//! `sha224`, `sha256`, `sha384` and `sha512` of bytes (or of a string's UTF-8 bytes, where
//! Postgres asks for a cast to `bytea`) are the digest's bytes. DataFusion has them behind
//! its `crypto_expressions` feature, which would build two more hash crates (BLAKE2,
//! BLAKE3); these use the MD5 and SHA-2 crates the Postgres wire already builds.

use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, BinaryBuilder, StringBuilder};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::DataType;
use datafusion::common::{Result, ScalarValue};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, TypeSignature,
    Volatility,
};
use datafusion::prelude::SessionContext;
use md5::{Digest, Md5};
use sha2::{Sha224, Sha256, Sha384, Sha512};

/// Which digest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Hash {
    Md5,
    Sha224,
    Sha256,
    Sha384,
    Sha512,
}

impl Hash {
    fn digest(self, bytes: &[u8]) -> Vec<u8> {
        match self {
            Hash::Md5 => Md5::digest(bytes).to_vec(),
            Hash::Sha224 => Sha224::digest(bytes).to_vec(),
            Hash::Sha256 => Sha256::digest(bytes).to_vec(),
            Hash::Sha384 => Sha384::digest(bytes).to_vec(),
            Hash::Sha512 => Sha512::digest(bytes).to_vec(),
        }
    }
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct PgHash {
    hash: Hash,
    signature: Signature,
}

impl ScalarUDFImpl for PgHash {
    fn name(&self) -> &str {
        match self.hash {
            Hash::Md5 => "md5",
            Hash::Sha224 => "sha224",
            Hash::Sha256 => "sha256",
            Hash::Sha384 => "sha384",
            Hash::Sha512 => "sha512",
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> Result<DataType> {
        Ok(match self.hash {
            Hash::Md5 => DataType::Utf8,
            _ => DataType::Binary,
        })
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let scalar = matches!(args.args[0], ColumnarValue::Scalar(_));
        let rows = if scalar { 1 } else { args.number_rows };
        let input = cast(&args.args[0].to_array(rows)?, &DataType::Binary)?;
        let input = input
            .as_any()
            .downcast_ref::<datafusion::arrow::array::BinaryArray>();
        let Some(input) = input else {
            return datafusion::common::exec_err!("{} takes bytes or text", self.name());
        };
        let out: ArrayRef = if self.hash == Hash::Md5 {
            let mut out = StringBuilder::new();
            for value in input {
                out.append_option(value.map(|v| hex(&self.hash.digest(v))));
            }
            Arc::new(out.finish())
        } else {
            let mut out = BinaryBuilder::new();
            for value in input {
                out.append_option(value.map(|v| self.hash.digest(v)));
            }
            Arc::new(out.finish())
        };
        if scalar {
            return Ok(ColumnarValue::Scalar(ScalarValue::try_from_array(&out, 0)?));
        }
        Ok(ColumnarValue::Array(out))
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Adds `md5` and the SHA-2 functions to `context`.
pub(crate) fn register(context: &SessionContext) {
    for hash in [
        Hash::Md5,
        Hash::Sha224,
        Hash::Sha256,
        Hash::Sha384,
        Hash::Sha512,
    ] {
        let signature = Signature::one_of(
            vec![
                TypeSignature::Exact(vec![DataType::Utf8]),
                TypeSignature::Exact(vec![DataType::Utf8View]),
                TypeSignature::Exact(vec![DataType::LargeUtf8]),
                TypeSignature::Exact(vec![DataType::Binary]),
                TypeSignature::Exact(vec![DataType::LargeBinary]),
                TypeSignature::Exact(vec![DataType::BinaryView]),
            ],
            Volatility::Immutable,
        );
        context.register_udf(ScalarUDF::new_from_impl(PgHash { hash, signature }));
    }
}
