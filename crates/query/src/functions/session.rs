//! Session functions that SQL clients and their drivers call on connecting:
//! `current_database()` and `current_schema()` (both the statement's database: a Strata
//! database is one schema of tables) and `version()`, which says PostgreSQL first because
//! drivers read the server's version from it (SQLAlchemy's Postgres dialect parses
//! `PostgreSQL <major>.<minor>`).

use datafusion::arrow::datatypes::DataType;
use datafusion::common::{Result, ScalarValue};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};

/// The PostgreSQL version Strata's Postgres wire answers as (its `server_version`).
pub const POSTGRES_VERSION: &str = "16.6";

/// What `version()` returns.
pub fn version_text() -> String {
    format!(
        "PostgreSQL {POSTGRES_VERSION} (Strata {}) on {}-{}",
        env!("CARGO_PKG_VERSION"),
        std::env::consts::ARCH,
        std::env::consts::OS
    )
}

/// Which session value a [`SessionFunction`] returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum SessionValue {
    /// `current_database()`.
    Database,
    /// `current_schema()`.
    Schema,
    /// `version()`.
    Version,
}

/// A function of no arguments returning a session value as text.
#[derive(Debug, PartialEq, Eq, Hash)]
pub(crate) struct SessionFunction {
    value: SessionValue,
    signature: Signature,
}

impl SessionFunction {
    pub(crate) fn new(value: SessionValue) -> Self {
        Self {
            value,
            signature: Signature::nullary(Volatility::Stable),
        }
    }
}

impl ScalarUDFImpl for SessionFunction {
    fn name(&self) -> &str {
        match self.value {
            SessionValue::Database => "current_database",
            SessionValue::Schema => "current_schema",
            SessionValue::Version => "version",
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let text = match self.value {
            // The engine names a statement's database as the session's default schema.
            SessionValue::Database | SessionValue::Schema => {
                args.config_options.catalog.default_schema.clone()
            }
            SessionValue::Version => version_text(),
        };
        Ok(ColumnarValue::Scalar(ScalarValue::Utf8(Some(text))))
    }
}

#[cfg(test)]
mod tests {
    use datafusion::arrow::array::AsArray;
    use datafusion::prelude::SessionContext;

    #[tokio::test]
    async fn session_functions_name_the_database_and_postgres_version() {
        let mut context = SessionContext::new();
        context
            .state_ref()
            .write()
            .config_mut()
            .options_mut()
            .catalog
            .default_schema = "telegraf".into();
        super::super::register_functions(&mut context).expect("register");
        let batches = context
            .sql("SELECT current_database(), current_schema(), version()")
            .await
            .expect("plan")
            .collect()
            .await
            .expect("run");
        let row: Vec<String> = batches[0]
            .columns()
            .iter()
            .map(|c| c.as_string::<i32>().value(0).to_owned())
            .collect();
        assert_eq!(row[0], "telegraf");
        assert_eq!(row[1], "telegraf");
        assert!(row[2].starts_with("PostgreSQL 16.6 (Strata "), "{}", row[2]);
    }
}
