//! Statements over the Postgres wire: the simple protocol (a query string of one or more
//! statements) and the extended one (Parse, Bind, Describe, Execute). Both end in
//! [`Queries::execute`], which answers session statements itself and sends everything
//! else to [`QueryEngine::sql_stream`], the entry `/sql` uses.

use std::borrow::Cow;
use std::fmt::Debug;
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::array::{ArrayRef, AsArray, RecordBatch, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef, UInt64Type};
use futures::{Sink, SinkExt, StreamExt, TryStreamExt};
use pgwire::api::copy::CopyHandler;
use pgwire::api::portal::{Format, Portal};
use pgwire::api::query::{ExtendedQueryHandler, SimpleQueryHandler};
use pgwire::api::results::{
    CopyResponse, DescribePortalResponse, DescribeStatementResponse, FieldInfo, QueryResponse,
    Response, Tag,
};
use pgwire::api::stmt::{QueryParser, StoredStatement};
use pgwire::api::store::{Entry, PortalStore};
use pgwire::api::{ClientInfo, ClientPortalStore, DEFAULT_NAME, Type};
use pgwire::error::{ErrorInfo, PgWireError, PgWireResult};
use pgwire::messages::PgWireBackendMessage;
use pgwire::messages::copy::{CopyData, CopyDone, CopyFail};
use pgwire::messages::data::{NoData, ParameterDescription};
use pgwire::messages::extendedquery::{Describe, TARGET_TYPE_BYTE_STATEMENT};
use postgres_types::Kind;
use strata_query::pg_catalog::types::pg_type;
use strata_query::{MAX_DESCRIBED_PARAMETERS, QueryEngine, QueryError, QueryStream, RowWriter};

use super::catalog_sql::{empty_answer, plannable_catalog_subqueries};
use super::column_names::postgres_names;
use super::copy_in::CopyIn;
use super::copy_statement::{Copy, Direction, Format as CopyFormat, copy_statement};
use super::encode;
use super::errors::{
    INSUFFICIENT_PRIVILEGE, NOT_SUPPORTED, PROTOCOL_VIOLATION, QUERY_CANCELED, UNDEFINED_PARAMETER,
    error, query_error,
};
use super::from_functions;
use super::params;
use super::select_series;
use super::session::{CancelSignal, Session, SessionStatement, session_statement};
use super::setting_calls::{Mode, setting_calls};
use super::settings_view;
use super::sql_text::{
    CastType, array_parameters, cast_parameters, from_postgres, parameter_count, split_statements,
    substitute,
};
use super::type_introspection;
use crate::auth::Access;

/// A statement prepared with Parse.
#[derive(Debug, Clone)]
pub(crate) struct Prepared {
    /// Its text, with `$n` where parameters go.
    sql: String,
    /// The type each parameter must have where the statement fixes it (DataFusion's
    /// inference), for clients that leave parameter types to the server.
    implied: Vec<Option<Type>>,
    /// Its result columns, when they could be found before parameters are bound.
    columns: Option<SchemaRef>,
}

/// Finds a statement's columns and parameter types at Parse.
#[derive(Debug)]
pub(crate) struct Parser {
    query: Arc<QueryEngine>,
}

/// Runs statements for both protocols.
#[derive(Debug)]
pub(crate) struct Queries {
    query: Arc<QueryEngine>,
    parser: Arc<Parser>,
}

impl Queries {
    pub(crate) fn new(query: Arc<QueryEngine>) -> Self {
        Self {
            parser: Arc::new(Parser {
                query: Arc::clone(&query),
            }),
            query,
        }
    }

    /// Starts a `COPY`: out, its rows as copy data; in, the copy-in state the client's
    /// copy data then feeds (`copy_in`).
    async fn copy(&self, session: &Session, copy: Copy) -> PgWireResult<Response> {
        let failed = |e: QueryError| query_error(&e, None);
        match &copy.direction {
            Direction::Out { query } => {
                if session.access == Access::ReadOnly && !strata_query::is_read_statement(query) {
                    return Err(error(
                        INSUFFICIENT_PRIVILEGE,
                        "the read-only token can only copy what a SELECT reads",
                    ));
                }
                let stream = self
                    .query
                    .sql_stream(&session.database, query)
                    .await
                    .map_err(failed)?;
                Ok(Response::CopyOut(
                    copy.response(stream, Arc::clone(&session.cancel)),
                ))
            }
            Direction::In { table, columns } => {
                if session.access == Access::ReadOnly {
                    return Err(error(
                        INSUFFICIENT_PRIVILEGE,
                        "the read-only token cannot run statements that change data (COPY FROM); connect with the auth token",
                    ));
                }
                let rows = RowWriter::new(self.query.engine(), &session.database, table, columns)
                    .map_err(failed)?;
                let format = i8::from(copy.format == CopyFormat::Binary);
                let state = CopyIn::new(copy.clone(), table.clone(), rows);
                let columns = state.columns();
                *session.copy_in.lock() = Some(state);
                Ok(Response::CopyIn(CopyResponse::new(
                    format,
                    columns,
                    futures::stream::empty(),
                )))
            }
        }
    }

    /// Runs one statement. `format` says which result columns go in binary; `origin` is
    /// the query text the client sent and the statement's byte offset in it, for error
    /// positions (`None` when the statement is not the client's text: parameters were
    /// substituted); `described` the columns a Describe already announced, which the rows
    /// must then follow.
    async fn execute(
        &self,
        session: &Session,
        sql: &str,
        format: &Format,
        origin: Option<(&str, usize)>,
        described: Option<&SchemaRef>,
    ) -> PgWireResult<Response> {
        session.start_statement();
        // Columns are named by the client's select list, not by a rewrite's.
        let client_sql = sql;
        let rewritten = to_strata(sql);
        // Positions point into the client's text only when it was not rewritten.
        let origin = origin.filter(|_| matches!(rewritten, Cow::Borrowed(_)));
        let sql = rewritten.as_ref();
        if let Some(statement) = session_statement(sql, session, true) {
            return session_response(&statement, session, format);
        }
        if let Some(columns) = empty_answer(sql) {
            let schema = text_schema(&columns);
            let stream = QueryStream::from_batches(Arc::clone(&schema), Vec::new());
            return Ok(Response::Query(rows_response(
                &schema,
                stream,
                format,
                Arc::default(),
            )));
        }
        if let Some(copy) = copy_statement(sql) {
            return self.copy(session, copy?).await;
        }
        let mut with_settings = setting_calls(sql, session, Mode::Run)?;
        if let Some(viewed) = settings_view::rewrite(&with_settings, session) {
            with_settings = Cow::Owned(viewed);
        }
        let origin = origin.filter(|_| matches!(with_settings, Cow::Borrowed(_)));
        let sql = with_settings.as_ref();
        if session.access == Access::ReadOnly && !strata_query::is_read_statement(sql) {
            return Err(error(
                INSUFFICIENT_PRIVILEGE,
                "the read-only token cannot run statements that change data (only SELECT, WITH, SHOW, DESCRIBE, EXPLAIN); connect with the auth token",
            ));
        }
        let failed = |e: QueryError| query_error(&e, origin);
        let stream = self
            .query
            .sql_stream(&session.database, sql)
            .await
            .map_err(failed)?;
        let schema = stream.schema();
        let first_word = sql
            .split_whitespace()
            .next()
            .unwrap_or_default()
            .to_ascii_uppercase();
        if first_word == "INSERT" && schema.fields().len() == 1 {
            let batches = stream.collect().await.map_err(failed)?;
            let count = batches
                .first()
                .and_then(|b| b.column(0).as_primitive_opt::<UInt64Type>())
                .filter(|c| !c.is_empty())
                .map_or(0, |c| c.value(0));
            return Ok(Response::Execution(
                Tag::new("INSERT").with_oid(0).with_rows(count as usize),
            ));
        }
        if schema.fields().is_empty() {
            stream.collect().await.map_err(failed)?;
            return Ok(Response::Execution(Tag::new(&command_tag(sql))));
        }
        let named = postgres_names(client_sql, &schema);
        let columns = described
            .filter(|d| d.fields().len() == schema.fields().len())
            .or(named.as_ref())
            .unwrap_or(&schema);
        Ok(Response::Query(rows_response(
            columns,
            stream,
            format,
            Arc::clone(&session.cancel),
        )))
    }
}

/// A client's statement in the SQL Strata plans: Postgres-only catalog syntax rewritten
/// (see `sql_text::from_postgres`, `catalog_sql` and `from_functions`), `generate_series`
/// in a select list unnested (`select_series`), asyncpg's type introspection replaced
/// (`type_introspection`); borrowed when nothing changed.
pub(super) fn to_strata(sql: &str) -> Cow<'_, str> {
    // The rewrites parse the statement: one too deeply nested is left as it is, for the
    // engine to refuse with the place it passed the bound.
    if strata_query::nesting::check(sql).is_err() {
        return Cow::Borrowed(sql);
    }
    if let Some(equivalent) = type_introspection::equivalent(sql) {
        return Cow::Owned(from_postgres(&equivalent).into_owned());
    }
    let mut text = from_postgres(sql);
    if let Some(aggregated) = plannable_catalog_subqueries(&text) {
        text = Cow::Owned(aggregated);
    }
    if let Some(rewritten) = from_functions::rewrite(&text) {
        text = Cow::Owned(rewritten);
    }
    if let Some(unnested) = select_series::rewrite(&text) {
        text = Cow::Owned(unnested);
    }
    text
}

/// The answer to a session statement.
fn session_response(
    statement: &SessionStatement,
    session: &Session,
    format: &Format,
) -> PgWireResult<Response> {
    Ok(match statement {
        SessionStatement::Done(tag) => Response::Execution(Tag::new(tag)),
        SessionStatement::Begin => Response::TransactionStart(Tag::new("BEGIN")),
        SessionStatement::End { rollback } => {
            Response::TransactionEnd(Tag::new(if *rollback { "ROLLBACK" } else { "COMMIT" }))
        }
        SessionStatement::UnknownSetting(name) => {
            return Err(error(
                "42704",
                format!("unrecognized configuration parameter \"{name}\""),
            ));
        }
        SessionStatement::Show(_) => {
            let schema = text_schema(&statement.columns());
            let rows = statement.rows(session);
            let columns: Vec<ArrayRef> = (0..schema.fields().len())
                .map(|i| {
                    Arc::new(StringArray::from_iter_values(
                        rows.iter().map(|r| r[i].as_str()),
                    )) as ArrayRef
                })
                .collect();
            let batch = RecordBatch::try_new(Arc::clone(&schema), columns)
                .map_err(|e| error("XX000", format!("cannot build the result: {e}")))?;
            let stream = QueryStream::from_batches(Arc::clone(&schema), vec![batch]);
            Response::Query(rows_response(&schema, stream, format, Arc::default()))
        }
    })
}

fn text_schema(names: &[String]) -> SchemaRef {
    Arc::new(Schema::new(
        names
            .iter()
            .map(|n| Field::new(n, DataType::Utf8, true))
            .collect::<Vec<_>>(),
    ))
}

/// The batches of `stream`, ended at once by a cancel request (with `query_canceled`), even
/// while a batch is being computed: dropping the stream stops the statement.
pub(super) fn cancellable(
    stream: QueryStream,
    cancel: Arc<CancelSignal>,
) -> impl futures::Stream<Item = PgWireResult<RecordBatch>> + Send + 'static {
    futures::stream::unfold(Some((stream, cancel)), |state| async move {
        let (mut stream, cancel) = state?;
        tokio::select! {
            biased;
            () = cancel.requested() => Some((
                Err(error(QUERY_CANCELED, "canceling statement due to user request")),
                None,
            )),
            next = stream.next() => match next? {
                Ok(batch) => Some((Ok(batch), Some((stream, cancel)))),
                Err(e) => Some((Err(query_error(&e, None)), None)),
            },
        }
    })
}

/// Rows of `stream`, encoded batch by batch as the client reads them. A cancel request
/// ends the stream at once, even while a batch is being computed: dropping it stops the
/// statement.
fn rows_response(
    schema: &Schema,
    stream: QueryStream,
    format: &Format,
    cancel: Arc<CancelSignal>,
) -> QueryResponse {
    let fields = Arc::new(encode::fields(schema, format));
    let encode_with = Arc::clone(&fields);
    let rows = cancellable(stream, cancel)
        .map(move |batch| encode::rows(&batch?, &encode_with))
        .map_ok(|rows| futures::stream::iter(rows.into_iter().map(Ok)))
        .try_flatten();
    QueryResponse::new(fields, rows)
}

/// The command tag of a statement that returns no rows: `CREATE TABLE`, `DROP DATABASE`,
/// `DELETE`, …
fn command_tag(sql: &str) -> String {
    let words: Vec<String> = sql
        .split_whitespace()
        .take(2)
        .map(str::to_ascii_uppercase)
        .collect();
    match words.first().map(String::as_str) {
        Some("CREATE" | "DROP" | "ALTER") => words.join(" "),
        Some(first) => first.to_owned(),
        None => String::new(),
    }
}

/// The connection's session (set up at authentication).
fn session<C: ClientInfo>(client: &C) -> PgWireResult<Arc<Session>> {
    client.session_extensions().get::<Session>().ok_or_else(|| {
        error(
            PROTOCOL_VIOLATION,
            "the connection has not finished authenticating",
        )
    })
}

fn error_info(error: PgWireError) -> Box<ErrorInfo> {
    match error {
        PgWireError::UserError(info) => info,
        other => Box::new(other.into()),
    }
}

#[async_trait]
impl SimpleQueryHandler for Queries {
    async fn do_query<C>(&self, client: &mut C, query: &str) -> PgWireResult<Vec<Response>>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let session = session(client)?;
        let statements = split_statements(query);
        if statements.is_empty() {
            return Ok(vec![Response::EmptyQuery]);
        }
        let last = statements.len() - 1;
        let mut out = Vec::with_capacity(statements.len());
        for (i, (offset, sql)) in statements.into_iter().enumerate() {
            match self
                .execute(
                    &session,
                    sql,
                    &Format::UnifiedText,
                    Some((query, offset)),
                    None,
                )
                .await
            {
                // Each running statement holds a query slot until its rows are read, and
                // they are read only after every statement has run: all but the last are
                // read now, so a long script cannot hold every slot and wait on itself.
                Ok(Response::Query(mut rows)) if i < last => {
                    let mut read = Vec::new();
                    while let Some(row) = rows.data_rows().next().await {
                        match row {
                            Ok(row) => read.push(Ok(row)),
                            Err(e) => {
                                out.push(Response::Error(error_info(e)));
                                return Ok(out);
                            }
                        }
                    }
                    let fields = rows.row_schema();
                    out.push(Response::Query(QueryResponse::new(
                        fields,
                        futures::stream::iter(read),
                    )));
                }
                Ok(response) => out.push(response),
                Err(e) => {
                    out.push(Response::Error(error_info(e)));
                    break;
                }
            }
        }
        Ok(out)
    }
}

#[async_trait]
impl QueryParser for Parser {
    type Statement = Prepared;

    async fn parse_sql<C>(
        &self,
        client: &C,
        sql: &str,
        _types: &[Option<Type>],
    ) -> PgWireResult<Option<Prepared>>
    where
        C: ClientInfo + Unpin + Send + Sync,
    {
        let session = session(client)?;
        // Describing a statement lists a type per parameter number, so `$2000000000` would
        // have the server allocate tens of gigabytes; no Bind could give it values anyway.
        let parameters = parameter_count(sql);
        if parameters > MAX_DESCRIBED_PARAMETERS {
            let which = if parameters == usize::MAX {
                "a parameter number is too large".to_owned()
            } else {
                format!("there is no parameter ${parameters}")
            };
            return Err(error(
                UNDEFINED_PARAMETER,
                format!("{which}: a statement takes at most {MAX_DESCRIBED_PARAMETERS} parameters"),
            ));
        }
        if let Some(statement) = session_statement(sql, &session, false) {
            return Ok(Some(Prepared {
                sql: sql.to_owned(),
                implied: Vec::new(),
                columns: Some(text_schema(&statement.columns())),
            }));
        }
        if let Some(columns) = empty_answer(sql) {
            // Not planned: its parameters are typed by their casts, which clients that
            // reflect the catalog write on each (SQLAlchemy's asyncpg dialect).
            return Ok(Some(Prepared {
                sql: sql.to_owned(),
                implied: with_cast_parameters(sql, Vec::new()),
                columns: Some(text_schema(&columns)),
            }));
        }
        // A COPY sends its rows as copy data, not as a result: it describes as no data.
        if let Some(copy) = copy_statement(sql) {
            copy?;
            return Ok(Some(Prepared {
                sql: sql.to_owned(),
                implied: Vec::new(),
                columns: Some(Arc::new(Schema::empty())),
            }));
        }
        let planned = to_strata(sql);
        let planned = match setting_calls(&planned, &session, Mode::Describe)? {
            Cow::Borrowed(_) => planned,
            Cow::Owned(text) => Cow::Owned(text),
        };
        let planned = match settings_view::rewrite(&planned, &session) {
            Some(viewed) => Cow::Owned(viewed),
            None => planned,
        };
        // Positions point into the client's text only when it was not rewritten.
        let origin = matches!(planned, Cow::Borrowed(_)).then_some((sql, 0));
        match self.query.describe(&session.database, &planned).await {
            Ok(description) => Ok(Some(Prepared {
                sql: sql.to_owned(),
                implied: with_array_parameters(
                    sql,
                    with_cast_parameters(
                        sql,
                        description
                            .parameters
                            .iter()
                            .map(|t| t.as_ref().map(encode::pg_type))
                            .collect(),
                    ),
                ),
                columns: Some(
                    postgres_names(sql, &description.schema).unwrap_or(description.schema),
                ),
            })),
            // Some statements can only be planned once their parameters have values; a
            // real mistake is reported when the statement runs.
            Err(e) if parameter_count(sql) > 0 && !matches!(e, QueryError::Syntax { .. }) => {
                Ok(Some(Prepared {
                    sql: sql.to_owned(),
                    implied: with_array_parameters(sql, Vec::new()),
                    columns: None,
                }))
            }
            Err(e) => Err(query_error(&e, origin)),
        }
    }

    fn get_parameter_types(&self, statement: &Prepared) -> PgWireResult<Vec<Type>> {
        let count = parameter_count(&statement.sql);
        Ok((0..count)
            .map(|i| {
                statement
                    .implied
                    .get(i)
                    .cloned()
                    .flatten()
                    .unwrap_or(Type::UNKNOWN)
            })
            .collect())
    }

    fn get_result_schema(
        &self,
        statement: &Prepared,
        format: Option<&Format>,
    ) -> PgWireResult<Vec<FieldInfo>> {
        let columns = statement.columns.as_ref().ok_or_else(|| {
            error(
                NOT_SUPPORTED,
                "the result columns of this statement are known only once its parameters are bound: describe the portal, or give the parameters' types",
            )
        })?;
        Ok(encode::fields(
            columns,
            format.unwrap_or(&Format::UnifiedText),
        ))
    }
}

/// `implied` with the parameters of `sql` cast where they stand (`sql_text::cast_parameters`)
/// typed as the cast says, where the plan found them untyped, or of the type Strata plans
/// the cast's as (`timestamp` for `timestamptz`).
fn with_cast_parameters(sql: &str, mut implied: Vec<Option<Type>>) -> Vec<Option<Type>> {
    for (n, cast) in cast_parameters(sql) {
        let Some(i) = n.checked_sub(1).filter(|&i| i < MAX_DESCRIBED_PARAMETERS) else {
            continue;
        };
        if implied.len() <= i {
            implied.resize(i + 1, None);
        }
        let (written, planned) = match cast {
            CastType::Timestamptz => (Type::TIMESTAMPTZ, Some(Type::TIMESTAMP)),
            CastType::Oid => (Type::OID, Some(Type::INT8)),
            CastType::OidArray => (Type::OID_ARRAY, Some(Type::INT8_ARRAY)),
            CastType::Other(oid) => match Type::from_oid(oid) {
                Some(written) => (written, None),
                None => continue,
            },
        };
        if implied[i].is_none() || implied[i] == planned {
            implied[i] = Some(written);
        }
    }
    implied
}

/// `implied` with the parameters of `sql` that stand alone in `ANY(…)`/`ALL(…)` typed as
/// arrays: of the type inferred for them, else of `text`.
fn with_array_parameters(sql: &str, mut implied: Vec<Option<Type>>) -> Vec<Option<Type>> {
    for n in array_parameters(sql) {
        let Some(i) = n.checked_sub(1).filter(|&i| i < MAX_DESCRIBED_PARAMETERS) else {
            continue;
        };
        if implied.len() <= i {
            implied.resize(i + 1, None);
        }
        let array = match implied[i].as_ref().map(Type::kind) {
            Some(Kind::Array(_)) => continue,
            Some(_) => implied[i]
                .as_ref()
                .and_then(|t| pg_type(t.oid()))
                .and_then(|t| Type::from_oid(t.array)),
            None => None,
        };
        implied[i] = Some(array.unwrap_or(Type::TEXT_ARRAY));
    }
    implied
}

/// The statement text of `portal`: its statement with each parameter as a literal.
fn bound_sql(portal: &Portal<Prepared>) -> PgWireResult<String> {
    let stored = &portal.statement;
    let count = parameter_count(&stored.statement.sql);
    if portal.parameters.len() != count {
        return Err(error(
            PROTOCOL_VIOLATION,
            format!(
                "bind message supplies {} parameters, but prepared statement \"{}\" requires {count}",
                portal.parameters.len(),
                stored.id
            ),
        ));
    }
    let literals = portal
        .parameters
        .iter()
        .enumerate()
        .map(|(i, value)| {
            let ty = parameter_type(stored, i);
            params::literal(value.as_deref(), &ty, portal.parameter_format.is_binary(i))
        })
        .collect::<PgWireResult<Vec<String>>>()?;
    substitute(&stored.statement.sql, &literals)
        .map_err(|n| error(PROTOCOL_VIOLATION, format!("there is no parameter ${n}")))
}

/// Parameter `i`'s type: the client's, else the statement's, else `unknown`.
fn parameter_type(stored: &StoredStatement<Prepared>, i: usize) -> Type {
    stored
        .parameter_types
        .get(i)
        .cloned()
        .flatten()
        .filter(|t| *t != Type::UNKNOWN)
        .or_else(|| stored.statement.implied.get(i).cloned().flatten())
        .unwrap_or(Type::UNKNOWN)
}

/// The `COPY … FROM STDIN` in progress on `session`, taken out of it while a message is
/// handled; a protocol violation when `message` came without one.
fn copy_in_progress(session: &Session, message: &str) -> PgWireResult<CopyIn> {
    session.copy_in.lock().take().ok_or_else(|| {
        error(
            PROTOCOL_VIOLATION,
            format!("{message} came with no COPY FROM STDIN in progress"),
        )
    })
}

/// The data of a `COPY … FROM STDIN` (`copy_in`): each message read, every full batch
/// written; at its end the rest written and `COPY n` sent, or the copy's error.
#[async_trait]
impl CopyHandler for Queries {
    async fn on_copy_data<C>(&self, client: &mut C, copy_data: CopyData) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let session = session(client)?;
        let mut state = copy_in_progress(&session, "copy data")?;
        let first = state.take(&copy_data.data);
        state.write_all(first).await;
        *session.copy_in.lock() = Some(state);
        Ok(())
    }

    async fn on_copy_done<C>(&self, client: &mut C, _done: CopyDone) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let session = session(client)?;
        let mut state = copy_in_progress(&session, "copy done")?;
        let first = state.finish();
        state.write_all(first).await;
        if let Some(failed) = state.failed {
            return Err(failed);
        }
        let tag = Tag::new("COPY").with_rows(state.copied as usize);
        client
            .send(PgWireBackendMessage::CommandComplete(tag.into()))
            .await?;
        Ok(())
    }

    async fn on_copy_fail<C>(&self, client: &mut C, fail: CopyFail) -> PgWireError
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        if let Ok(session) = session(client) {
            session.copy_in.lock().take();
        }
        error(
            QUERY_CANCELED,
            format!("COPY from stdin failed: {}", fail.message),
        )
    }
}

#[async_trait]
impl ExtendedQueryHandler for Queries {
    type Statement = Prepared;
    type QueryParser = Parser;

    fn query_parser(&self) -> Arc<Parser> {
        Arc::clone(&self.parser)
    }

    /// As pgwire's, except that a statement returning no rows is described as Postgres
    /// describes it, parameters then NoData (pgwire sends an empty RowDescription when the
    /// statement has parameters, and pgjdbc then takes an INSERT for a query).
    async fn on_describe<C>(&self, client: &mut C, message: Describe) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Prepared>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        if message.target_type == TARGET_TYPE_BYTE_STATEMENT {
            let name = message.name.as_deref().unwrap_or(DEFAULT_NAME);
            if let Some(Entry::Value(statement)) = client.portal_store().get_statement(name) {
                let described = self.do_describe_statement(client, &statement).await?;
                if described.fields.is_empty() {
                    let types = described.parameters.iter().map(Type::oid).collect();
                    client
                        .feed(PgWireBackendMessage::ParameterDescription(
                            ParameterDescription::new(types),
                        ))
                        .await?;
                    client
                        .send(PgWireBackendMessage::NoData(NoData::new()))
                        .await?;
                    return Ok(());
                }
            }
        }
        self._on_describe(client, message).await
    }

    async fn do_describe_statement<C>(
        &self,
        _client: &mut C,
        target: &StoredStatement<Prepared>,
    ) -> PgWireResult<DescribeStatementResponse>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Prepared>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let count = parameter_count(&target.statement.sql);
        let types = (0..count).map(|i| parameter_type(target, i)).collect();
        let fields = self.parser.get_result_schema(&target.statement, None)?;
        Ok(DescribeStatementResponse::new(types, fields))
    }

    async fn do_describe_portal<C>(
        &self,
        client: &mut C,
        portal: &Portal<Prepared>,
    ) -> PgWireResult<DescribePortalResponse>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Prepared>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let format = &portal.result_column_format;
        if let Some(columns) = &portal.statement.statement.columns {
            return Ok(DescribePortalResponse::new(encode::fields(columns, format)));
        }
        let session = session(client)?;
        let sql = bound_sql(portal)?;
        let description = self
            .query
            .describe(&session.database, &sql)
            .await
            .map_err(|e| query_error(&e, None))?;
        let columns = postgres_names(&sql, &description.schema).unwrap_or(description.schema);
        Ok(DescribePortalResponse::new(encode::fields(
            &columns, format,
        )))
    }

    async fn do_query<C>(
        &self,
        client: &mut C,
        portal: &Portal<Prepared>,
        _max_rows: usize,
    ) -> PgWireResult<Response>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Prepared>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let session = session(client)?;
        let sql = bound_sql(portal)?;
        let origin = (portal.parameters.is_empty()).then_some((sql.as_str(), 0));
        let described = portal.statement.statement.columns.as_ref();
        self.execute(
            &session,
            &sql,
            &portal.result_column_format,
            origin,
            described,
        )
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::command_tag;

    #[test]
    fn command_tags_name_what_ran() {
        assert_eq!(command_tag("create table cpu (x double)"), "CREATE TABLE");
        assert_eq!(command_tag("DROP DATABASE db"), "DROP DATABASE");
        assert_eq!(command_tag("delete from cpu"), "DELETE");
    }
}
