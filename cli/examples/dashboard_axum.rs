//! An axum app with tideq's dashboard mounted under `/admin/tideq`, behind the app's own login.
//!
//! The "login" here is a stand-in: a middleware reads the `X-User` header into a `User`
//! extension (a real app would read its session cookie); `alice` may act, `bob` may only read,
//! anyone else is refused. Run it with `cargo run -p tideq-cli --example dashboard_axum -- --listen
//! 127.0.0.1:8000` (Redis from `TIDEQ_REDIS_URL`, else `redis://127.0.0.1:6379`); it prints its
//! address and serves until Ctrl-C or until its standard input closes.

use axum::extract::Request;
use axum::middleware::{self, Next};
use axum::response::Response;
use axum::routing::get;
use axum::Router;
use tideq_cli::dashboard::{Action, Dashboard, MountOptions};
use tokio::io::AsyncReadExt;

/// Who the app's login says is asking.
#[derive(Clone)]
struct User {
    admin: bool,
}

async fn login(mut req: Request, next: Next) -> Response {
    let user = match req.headers().get("x-user").and_then(|v| v.to_str().ok()) {
        Some("alice") => Some(User { admin: true }),
        Some("bob") => Some(User { admin: false }),
        _ => None,
    };
    if let Some(user) = user {
        req.extensions_mut().insert(user);
    }
    next.run(req).await
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let listen = args
        .iter()
        .position(|a| a == "--listen")
        .and_then(|i| args.get(i + 1).cloned())
        .unwrap_or_else(|| "127.0.0.1:8000".into());
    let url = std::env::var("TIDEQ_REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into());
    let client = tideq::Client::open(&url)?;

    let dashboard = Dashboard::new(
        client,
        MountOptions::new().authorize(|parts, action| {
            let user = parts.extensions.get::<User>().cloned();
            async move {
                match (user, action) {
                    (Some(_), Action::Read) => true,
                    (Some(user), Action::Act) => user.admin,
                    (None, _) => false,
                }
            }
        }),
    )?;
    let app = Router::new()
        .route("/", get(|| async { "the app" }))
        .nest_service("/admin/tideq", dashboard.router())
        .layer(middleware::from_fn(login));

    let listener = tokio::net::TcpListener::bind(&listen).await?;
    println!("listening on http://{}", listener.local_addr()?);
    let stop = async {
        let mut stdin = tokio::io::stdin();
        let mut buf = [0u8; 64];
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = async { while matches!(stdin.read(&mut buf).await, Ok(n) if n > 0) {} } => {}
        }
    };
    axum::serve(listener, app)
        .with_graceful_shutdown(stop)
        .await?;
    Ok(())
}
