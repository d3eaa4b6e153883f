//! Connecting to the API server: the kube-rs client from the block's `kubeconfig`,
//! `endpoint` and `tls`, or the pod's service account, with every response counted in the
//! watch's status (each attempt of a retried one too).

use std::fmt::Debug;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use kube::Client;

use super::status::ApiStatus;
use crate::config::ApiConfig;
use crate::model::Kind;

/// The kind a request path reads: its last segment is the kind's plural
/// (`/api/v1/services`, `/api/v1/namespaces/shop/services`,
/// `/apis/discovery.k8s.io/v1/endpointslices`).
pub(super) fn kind_of_path(path: &str) -> Option<Kind> {
    let plural = path.rsplit('/').next()?;
    Kind::ALL.into_iter().find(|kind| kind.plural() == plural)
}

/// How long connecting to the API server may take before the attempt counts as failed.
pub(super) const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// Requests waiting for the client's stack at most (beyond that, callers wait their turn).
const RETRY_BUFFER: usize = 1024;

/// Why the API server cannot be reached as configured.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    /// The kubeconfig file is missing, malformed, or lacks the context.
    #[error("kubeconfig {path}: {error}")]
    Kubeconfig {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        error: String,
    },
    /// `endpoint` is not a URL.
    #[error("endpoint {url:?} is not a URL: {error}")]
    Endpoint {
        /// The argument.
        url: String,
        /// What is wrong.
        error: String,
    },
    /// A `tls` file cannot be read.
    #[error("tls {what} {path}: {error}")]
    TlsFile {
        /// Which of CERT, KEY, CACERT.
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// What is wrong.
        error: std::io::Error,
    },
    /// Neither `kubeconfig` nor `endpoint`, and not in a pod.
    #[error(
        "not running in a Kubernetes pod ({0}); give `kubeconfig PATH [CONTEXT]` or \
         `endpoint URL`, or static objects with `objects FILE...`"
    )]
    InCluster(String),
    /// The client could not be built from the configuration.
    #[error("building the API client: {0}")]
    Client(String),
}

/// Builds the API client `api` describes: `kubeconfig` first, then `endpoint` (with `tls`),
/// else the pod's service account, as CoreDNS chooses. Every request it sends is reported to
/// `status`, and limited by `apiserver_qps`/`apiserver_burst`/`apiserver_max_inflight`.
pub async fn connect(api: &ApiConfig, status: Arc<ApiStatus>) -> Result<Client, ConnectError> {
    let mut config = if let Some((path, context)) = &api.kubeconfig {
        let kubeconfig_error = |error: &dyn std::fmt::Display| ConnectError::Kubeconfig {
            path: path.clone(),
            error: error.to_string(),
        };
        if !path.is_file() {
            return Err(kubeconfig_error(&"no such file"));
        }
        let kubeconfig =
            kube::config::Kubeconfig::read_from(path).map_err(|e| kubeconfig_error(&e))?;
        // Said as the tools say it (kube's own words are "failed to load current context").
        if let Some(why) = context
            .as_deref()
            .and_then(|name| crate::source::live::missing_context(&kubeconfig, name))
        {
            return Err(kubeconfig_error(&why));
        }
        let options = kube::config::KubeConfigOptions {
            context: context.clone(),
            ..kube::config::KubeConfigOptions::default()
        };
        kube::Config::from_custom_kubeconfig(kubeconfig, &options)
            .await
            .map_err(|e| kubeconfig_error(&e))?
    } else if let Some(url) = &api.endpoint {
        let uri = url
            .parse::<http::Uri>()
            .map_err(|error| ConnectError::Endpoint {
                url: url.clone(),
                error: error.to_string(),
            })
            .and_then(|uri| {
                if uri.scheme().is_some() && uri.host().is_some() {
                    Ok(uri)
                } else {
                    Err(ConnectError::Endpoint {
                        url: url.clone(),
                        error: "expected a scheme and a host, as https://10.0.0.1:6443".into(),
                    })
                }
            })?;
        let mut config = kube::Config::new(uri);
        if let Some(tls) = &api.tls {
            for (what, path) in [("CERT", &tls.cert), ("KEY", &tls.key), ("CACERT", &tls.ca)] {
                std::fs::metadata(path).map_err(|error| ConnectError::TlsFile {
                    what,
                    path: path.clone(),
                    error,
                })?;
            }
            config.root_cert_file = Some(tls.ca.clone());
            config.auth_info.client_certificate = Some(tls.cert.display().to_string());
            config.auth_info.client_key = Some(tls.key.display().to_string());
        }
        config
    } else {
        kube::Config::incluster().map_err(|error| ConnectError::InCluster(error.to_string()))?
    };
    config.connect_timeout = Some(CONNECT_TIMEOUT);
    // kube retries 429, 503 and 504 inside its own stack, where no layer of ours sees the
    // answers: the same retries (kube's policy, Retry-After honoured) go outside the observer
    // instead, so that each refusal is counted and said.
    config.default_retry = false;
    let concurrency = api
        .max_inflight
        .map(|max| tower::limit::ConcurrencyLimitLayer::new(max as usize));
    let rate = api.qps.map(|qps| {
        // client-go's token bucket, as a window: `burst` requests per `burst / qps` seconds
        // keeps the average at `qps` and lets a burst through at once.
        let burst = api.burst.unwrap_or_else(|| (qps.ceil() as u32).max(1));
        tower::limit::RateLimitLayer::new(
            u64::from(burst),
            Duration::from_secs_f64(f64::from(burst) / qps),
        )
    });
    let observe = Observe(status);
    let builder = kube::client::ClientBuilder::try_from(config)
        .map_err(|error| ConnectError::Client(error.to_string()))?;
    Ok(builder
        .with_layer(&observe)
        // The retry clones the service it retries; a buffer makes kube's stack cloneable.
        .with_layer(&tower::buffer::BufferLayer::new(RETRY_BUFFER))
        .with_layer(&tower::retry::RetryLayer::new(
            kube::client::retry::RetryPolicy::server_retry(),
        ))
        .with_layer(&tower::util::option_layer(concurrency))
        .with_layer(&tower::util::option_layer(rate))
        .build())
}

/// A layer reporting each response (or its absence) to the watch's status, with the
/// resource its request was about.
#[derive(Clone)]
pub(super) struct Observe(pub(super) Arc<ApiStatus>);

impl<S> tower::Layer<S> for Observe {
    type Service = Observed<S>;

    fn layer(&self, inner: S) -> Observed<S> {
        Observed {
            inner,
            status: Arc::clone(&self.0),
        }
    }
}

/// The service [`Observe`] wraps.
#[derive(Clone)]
pub(super) struct Observed<S> {
    inner: S,
    status: Arc<ApiStatus>,
}

impl<S, B, R> tower::Service<http::Request<B>> for Observed<S>
where
    S: tower::Service<http::Request<B>, Response = http::Response<R>>,
    S::Error: std::fmt::Display,
    S::Future: Send + 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = futures::future::BoxFuture<'static, Result<S::Response, S::Error>>;

    fn poll_ready(
        &mut self,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        let resource = kind_of_path(request.uri().path());
        let streaming = request
            .uri()
            .query()
            .is_some_and(|query| query.contains("sendInitialEvents=true"));
        let status = Arc::clone(&self.status);
        let response = self.inner.call(request);
        Box::pin(async move {
            let result = response.await;
            match &result {
                // A streaming list refused is an answer the watch acts on (it lists in pages
                // instead), not an outage.
                Ok(response)
                    if streaming && super::feed::REFUSALS.contains(&response.status().as_u16()) =>
                {
                    status.counted(response.status().as_u16());
                }
                Ok(response) => {
                    let code = response.status().as_u16();
                    status.answered(code, resource);
                    let media = response.headers().get(http::header::CONTENT_TYPE);
                    if let (Some(resource), Some(media), true) =
                        (resource, media, (200..300).contains(&code))
                    {
                        let gzip = super::reflector::gzipped(response.headers()).unwrap_or(false);
                        status.encoded(resource, media.to_str().unwrap_or_default(), gzip);
                    }
                }
                Err(error) => status.unreachable(&error.to_string()),
            }
            result
        })
    }
}
