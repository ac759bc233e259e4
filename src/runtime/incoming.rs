//! A request as the runtime hands it over, before any `worker::Request` is
//! made of it. Making one reads the request's method, URL, headers and its
//! `cf` object, a runtime call that builds that object, on every request.
//! The router reads only the method and the path; a webhook reads a few
//! headers and the body. So a webhook is served from this, and every other
//! route gets its `worker::Request` ([`Incoming::into_request`]).

use worker::{Method, Request};

use crate::api_error::ApiError;

pub struct Incoming(worker::web_sys::Request);

impl From<worker::web_sys::Request> for Incoming {
    fn from(request: worker::web_sys::Request) -> Self {
        Incoming(request)
    }
}

impl Incoming {
    pub fn method(&self) -> Method {
        Method::from(self.0.method())
    }

    /// The path the route table matches ([`crate::routes::path_of`]).
    pub fn path(&self) -> String {
        crate::routes::path_of(&self.0.url()).to_string()
    }

    pub fn url(&self) -> worker::Result<url::Url> {
        Ok(url::Url::parse(&self.0.url())?)
    }

    pub fn header(&self, name: &str) -> worker::Result<Option<String>> {
        Ok(self.0.headers().get(name)?)
    }

    pub fn has_header(&self, name: &str) -> bool {
        self.0.headers().has(name).unwrap_or(false)
    }

    /// The body, at most `cap` bytes (413 past it, 400 unreadable). A body
    /// of a declared length is read at once; one without (chunked) is read
    /// as a stream by [`crate::runtime::http::read_body`].
    pub async fn body(self, cap: usize) -> Result<Vec<u8>, ApiError> {
        let declared = crate::api_error::declared_length(self.header("content-length").ok().flatten(), cap)?;
        if declared.is_none() {
            return crate::runtime::http::read_body(&mut self.into_request(), cap).await;
        }
        let unreadable = |_| ApiError::BadRequest("unreadable body".into());
        // The runtime holds the body to its declared length.
        let buffer =
            crate::runtime::settled::settled(&self.0.array_buffer().map_err(unreadable)?).await.map_err(unreadable)?;
        Ok(js_sys::Uint8Array::new(&buffer).to_vec())
    }

    /// The request for a route that reads more than this offers.
    pub fn into_request(self) -> Request {
        Request::from(self.0)
    }
}
