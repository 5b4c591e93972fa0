//! TCP writes and their visibility: handing batches to the plain TCP listener (no answer),
//! counting each device's rows on `/sql` every [`CHECK_EVERY`](super::CHECK_EVERY)
//! operations so reads use only rows known visible, and the bounded wait at the end until
//! every row sent shows up.

use std::io::Write;
use std::net::TcpStream;
use std::time::{Duration, Instant};

use super::answer::{cell_count, parse_answer};
use super::client::{Client, http_failure};
use super::timestamps::time_literal;
use crate::http::BodyEncoding;
use crate::iot::{MEASUREMENT, device_name};

/// Time between two counts while waiting for TCP rows to become visible.
const VISIBILITY_POLL: Duration = Duration::from_millis(20);

impl Client<'_> {
    /// Hands the body built to the TCP socket (reconnecting after an earlier failure).
    pub(super) fn send_body(&mut self) -> Result<(), String> {
        if self.tcp.is_none() {
            self.tcp = Some(connect_tcp(self.config.tcp.as_deref().unwrap_or_default())?);
        }
        let Some(stream) = self.tcp.as_mut() else {
            return Err("no TCP connection".into());
        };
        let sent = stream.write_all(&self.body);
        sent.map_err(|e| {
            self.tcp = None;
            format!("TCP send: {e}")
        })
    }

    /// `SELECT count(*)` of `device`'s rows before row `before` (all rows when `None`).
    pub(super) fn count_rows(&mut self, device: u32, before: Option<u64>) -> Result<u64, String> {
        let bound = before
            .map(|row| {
                format!(
                    " AND time < {}",
                    time_literal(self.config.iot.timestamp_ms(row))
                )
            })
            .unwrap_or_default();
        let sql = format!(
            "SELECT count(*) FROM {MEASUREMENT} WHERE device = '{}'{bound}",
            device_name(device)
        );
        let response = self
            .http
            .post(&self.sql_path, sql.as_bytes(), BodyEncoding::Text)
            .map_err(|e| e.to_string())?;
        if response.status != 200 {
            return Err(http_failure(response.status, &response.body));
        }
        let answer = parse_answer(&response.body)?;
        match answer.rows.as_slice() {
            [] => Ok(0),
            [row] => cell_count(row, 0),
            _ => Err(format!("count(*) gave {} rows", answer.rows.len())),
        }
    }

    /// TCP: marks visible the rows sent before the previous check, when they all are.
    pub(super) fn check_visibility(&mut self) {
        for index in 0..self.devices.len() {
            let (id, pending, visible) = {
                let d = &self.devices[index];
                (d.id, d.pending, d.visible)
            };
            if pending > visible {
                self.run.checks += 1;
                // A failed check leaves the reads on the rows known so far.
                if self.count_rows(id, Some(pending)) == Ok(pending) {
                    self.devices[index].visible = pending;
                }
            }
            self.devices[index].pending = self.devices[index].sent;
        }
    }

    /// TCP, at the end: closes the connection (the server then writes what it holds) and
    /// waits, up to `visibility_timeout` in all, until each device shows every row sent.
    pub(super) fn wait_visible(&mut self) {
        let started = Instant::now();
        self.tcp = None;
        let deadline = started + self.config.visibility_timeout;
        for index in 0..self.devices.len() {
            let (id, sent) = (self.devices[index].id, self.devices[index].sent);
            loop {
                self.run.checks += 1;
                match self.count_rows(id, None) {
                    Ok(count) if count == sent => {
                        self.devices[index].visible = sent;
                        break;
                    }
                    Ok(count) if count > sent => {
                        self.note_error(format!(
                            "{} has {count} rows, more than the {sent} sent",
                            device_name(id)
                        ));
                        break;
                    }
                    Ok(_) => {}
                    Err(e) => self.note_error(format!("visibility count: {e}")),
                }
                if Instant::now() >= deadline {
                    break;
                }
                std::thread::sleep(VISIBILITY_POLL);
            }
        }
        self.run.visibility_wait = started.elapsed();
    }
}

/// Connects to the TCP listener at `addr`, with Nagle off.
pub(super) fn connect_tcp(addr: &str) -> Result<TcpStream, String> {
    let stream = TcpStream::connect(addr).map_err(|e| format!("cannot connect to {addr}: {e}"))?;
    stream
        .set_nodelay(true)
        .map_err(|e| format!("cannot set TCP_NODELAY on {addr}: {e}"))?;
    Ok(stream)
}
