//! A loopback HTTP server that stops when its handle is dropped.

use axum::Router;
use tokio::net::TcpListener;
use tokio::sync::oneshot;

pub struct ServerHandle {
    pub base_url: String,
    stop: Option<oneshot::Sender<()>>,
}

impl ServerHandle {
    pub async fn serve(router: Router) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind a loopback port");
        let address = listener.local_addr().expect("local address");
        let (stop, stopped) = oneshot::channel::<()>();
        tokio::spawn(async move {
            let _ = axum::serve(listener, router)
                .with_graceful_shutdown(async {
                    let _ = stopped.await;
                })
                .await;
        });
        ServerHandle { base_url: format!("http://{address}"), stop: Some(stop) }
    }
}

impl Drop for ServerHandle {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}
