//! Connection start-up: protocol version, authentication and the session.
//!
//! With auth off every connection is trusted (the listener is on loopback unless told
//! otherwise, as for HTTP). With auth on the client is asked for a cleartext password,
//! which must be the auth token (everything) or the read-only token (queries only); the
//! user name is not checked. Use TLS (`--tls-cert`/`--tls-key`) when the password crosses
//! a network.

use std::collections::HashMap;
use std::fmt::Debug;
use std::sync::Arc;

use async_trait::async_trait;
use futures::{Sink, SinkExt};
use parking_lot::Mutex;
use pgwire::api::auth::{
    DefaultServerParameterProvider, StartupHandler, finish_authentication, protocol_negotiation,
    save_startup_parameters_to_metadata,
};
use pgwire::api::cancel::CancelHandler;
use pgwire::api::{
    ClientInfo, ConnectionManager, PgWireConnectionState, PidSecretKeyGenerator,
    RandomPidSecretKeyGenerator,
};
use pgwire::error::{ErrorInfo, PgWireError, PgWireResult};
use pgwire::messages::cancel::CancelRequest;
use pgwire::messages::startup::{Authentication, SecretKey};
use pgwire::messages::{PgWireBackendMessage, PgWireFrontendMessage};

use super::errors::INVALID_PASSWORD;
use super::session::{CancelSignal, Session};
use crate::auth::{self, Access};
use crate::config::{DEFAULT_SQL_DATABASE, ServerConfig};

/// A connection as cancel requests name it: its process id and secret key.
type ConnectionKey = (i32, Vec<u8>);

/// The cancel signals of open connections.
#[derive(Debug, Default)]
pub(crate) struct CancelFlags {
    flags: Mutex<HashMap<ConnectionKey, Arc<CancelSignal>>>,
}

impl CancelFlags {
    fn register(self: &Arc<Self>, pid: i32, key: &SecretKey) -> (Arc<CancelSignal>, FlagGuard) {
        let flag = Arc::new(CancelSignal::default());
        let id = (pid, key.to_bytes().to_vec());
        self.flags.lock().insert(id.clone(), Arc::clone(&flag));
        let guard = FlagGuard {
            flags: Arc::clone(self),
            id,
        };
        (flag, guard)
    }
}

/// Removes a connection's cancel flag when the connection ends (its session extensions
/// are dropped).
#[derive(Debug)]
struct FlagGuard {
    flags: Arc<CancelFlags>,
    id: ConnectionKey,
}

impl Drop for FlagGuard {
    fn drop(&mut self) {
        self.flags.flags.lock().remove(&self.id);
    }
}

/// Answers cancel requests: a statement being planned is abandoned (pgwire's own handle),
/// one whose rows are being computed or sent is dropped at once (see `query`).
#[derive(Debug)]
pub(crate) struct Canceller {
    pub flags: Arc<CancelFlags>,
    pub manager: Arc<ConnectionManager>,
}

#[async_trait]
impl CancelHandler for Canceller {
    async fn on_cancel_request(&self, request: CancelRequest) {
        let id = (request.pid, request.secret_key.to_bytes().to_vec());
        let flag = self.flags.flags.lock().get(&id).cloned();
        if let Some(flag) = flag {
            flag.cancel();
            self.manager.cancel(request.pid, &request.secret_key).await;
        }
    }
}

/// The start-up handler: see the module doc.
#[derive(Debug)]
pub(crate) struct Startup {
    pub config: Arc<ServerConfig>,
    pub flags: Arc<CancelFlags>,
    pub manager: Arc<ConnectionManager>,
    pub keys: RandomPidSecretKeyGenerator,
}

impl Startup {
    /// Registers the connection for cancel requests, opens its session and tells the
    /// client it may query.
    async fn finish<C>(&self, client: &mut C, access: Access) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let (pid, key) = self.keys.generate(client);
        client.set_pid_and_secret_key(pid, key.clone());
        let (handle, guard) = self.manager.register(pid, key.clone());
        let (flag, flag_guard) = self.flags.register(pid, &key);
        let metadata = client.metadata();
        let database = metadata
            .get("database")
            .or_else(|| metadata.get("user"))
            .filter(|d| !d.is_empty())
            .cloned()
            .unwrap_or_else(|| DEFAULT_SQL_DATABASE.to_owned());
        let extensions = client.session_extensions();
        extensions.insert(handle);
        extensions.insert(guard);
        extensions.insert(flag_guard);
        extensions.insert(Session::new(database, access, flag));
        let mut parameters = DefaultServerParameterProvider::default();
        parameters.server_version = format!(
            "{} (Strata {})",
            strata_query::POSTGRES_VERSION,
            env!("CARGO_PKG_VERSION")
        );
        parameters.time_zone = "UTC".to_owned();
        parameters.date_style = "ISO, MDY".to_owned();
        parameters.is_superuser = access == Access::Full;
        finish_authentication(client, &parameters).await
    }
}

#[async_trait]
impl StartupHandler for Startup {
    async fn on_startup<C>(
        &self,
        client: &mut C,
        message: PgWireFrontendMessage,
    ) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        match message {
            PgWireFrontendMessage::Startup(ref startup) => {
                protocol_negotiation(client, startup).await?;
                save_startup_parameters_to_metadata(client, startup);
                if self.config.auth_token.is_none() {
                    return self.finish(client, Access::Full).await;
                }
                client.set_state(PgWireConnectionState::AuthenticationInProgress);
                client
                    .send(PgWireBackendMessage::Authentication(
                        Authentication::CleartextPassword,
                    ))
                    .await?;
                Ok(())
            }
            PgWireFrontendMessage::PasswordMessageFamily(message) => {
                let password = message.into_password()?;
                let user = client.metadata().get("user").cloned().unwrap_or_default();
                match auth::token_access(&self.config, &password.password) {
                    Some(access) => self.finish(client, access).await,
                    None => Err(PgWireError::UserError(Box::new(ErrorInfo::new(
                        "FATAL".to_owned(),
                        INVALID_PASSWORD.to_owned(),
                        format!(
                            "password authentication failed for user \"{user}\": the password must be the server's auth token or read-only token"
                        ),
                    )))),
                }
            }
            _ => Ok(()),
        }
    }
}
