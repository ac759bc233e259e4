//! A minimal Chrome DevTools Protocol client for wrangler's inspector proxy:
//! one WebSocket to the Worker's isolate, one command at a time.
//!
//! Blocking (tungstenite): each command is answered in milliseconds, and the
//! requests the bench sends are on other sockets.

use std::net::TcpStream;

use serde_json::{json, Value};
use tungstenite::stream::MaybeTlsStream;
use tungstenite::{Message, WebSocket};

/// A DevTools session with the Worker's isolate.
pub struct Inspector {
    socket: WebSocket<MaybeTlsStream<TcpStream>>,
    next_id: u64,
    /// The events received while waiting for answers, in order.
    events: Vec<Value>,
}

impl Inspector {
    /// Connects to the one target wrangler's proxy lists at `/json` (the
    /// user Worker; its Durable Objects run in the same isolate).
    pub async fn connect(inspector_port: u16) -> Inspector {
        let targets: Value = reqwest::get(format!("http://127.0.0.1:{inspector_port}/json"))
            .await
            .and_then(|response| response.error_for_status())
            .expect("GET the inspector's /json")
            .json()
            .await
            .expect("the inspector's /json");
        let url = targets[0]["webSocketDebuggerUrl"].as_str().expect("a webSocketDebuggerUrl").to_string();
        let (socket, _) = tungstenite::connect(url).expect("connect to the inspector");
        Inspector { socket, next_id: 0, events: Vec::new() }
    }

    /// Sends a command and returns its result, keeping the events that come
    /// meanwhile (console messages, execution contexts) for
    /// [`Inspector::events`]. workerd answers a command without a result
    /// value by echoing it (`id`, `method`, `params`), so the answer is the
    /// first message with the id.
    pub fn call(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        let command = json!({ "id": id, "method": method, "params": params });
        self.socket.send(Message::text(command.to_string())).expect("send to the inspector");
        loop {
            let Message::Text(text) = self.socket.read().expect("read from the inspector") else { continue };
            let mut message: Value = serde_json::from_str(&text).expect("a DevTools message");
            if message["id"] != id {
                if message.get("id").is_none() {
                    self.events.push(message);
                }
                continue;
            }
            if let Some(error) = message.get("error") {
                panic!("{method}: {error}");
            }
            return message["result"].take();
        }
    }

    /// The events received so far (`method`, `params`).
    #[allow(dead_code)] // tests/recovery.rs reads them; the bench does not
    pub fn events(&self) -> &[Value] {
        &self.events
    }
}
