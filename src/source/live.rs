//! One read of the live cluster for the operator's tools (`records`, `explain`, `endpoints`
//! ...): the objects they need, listed from the API server of a kubeconfig context as
//! `kubectl get -o json` would print them, page by page, and handed on as text so that the
//! tools read them through the same [`Loader`](super::Loader) as an objects file.
//!
//! The context is chosen as kubectl chooses it: `--kubeconfig`, else `KUBECONFIG` (several
//! files, merged) or `~/.kube/config`; `--context`, else the file's current context; and
//! inside a pod without a kubeconfig, the pod's service account. A failure is one
//! [`LiveError`] naming the context, the verb and the resource.

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use kube::Client;
use kube::api::ListParams;
use kube::config::{KubeConfigOptions, Kubeconfig};

/// How many objects one list request asks for (kubectl's `--chunk-size`).
pub const PAGE: u32 = 500;

/// How long connecting may take before the cluster counts as unreachable.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// A kind of object the tools read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ListKind {
    /// Namespaces (cluster-scoped).
    Namespaces,
    /// Services.
    Services,
    /// EndpointSlices (discovery.k8s.io/v1).
    EndpointSlices,
    /// Pods.
    Pods,
}

impl ListKind {
    /// The resource's plural, as RBAC and kubectl name it.
    pub fn resource(self) -> &'static str {
        match self {
            Self::Namespaces => "namespaces",
            Self::Services => "services",
            Self::EndpointSlices => "endpointslices",
            Self::Pods => "pods",
        }
    }

    /// The resource as kubectl's errors name it: `endpointslices.discovery.k8s.io`.
    pub fn qualified(self) -> &'static str {
        match self {
            Self::EndpointSlices => "endpointslices.discovery.k8s.io",
            other => other.resource(),
        }
    }

    fn group_version(self) -> &'static str {
        match self {
            Self::EndpointSlices => "/apis/discovery.k8s.io/v1",
            _ => "/api/v1",
        }
    }

    /// The collection's path, in `namespace` or across all of them.
    fn path(self, namespace: Option<&str>) -> String {
        match (self, namespace) {
            (Self::Namespaces, _) | (_, None) => {
                format!("{}/{}", self.group_version(), self.resource())
            }
            (_, Some(namespace)) => format!(
                "{}/namespaces/{namespace}/{}",
                self.group_version(),
                self.resource()
            ),
        }
    }
}

/// What to list: a kind, in one namespace or all, with an optional field selector.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Wanted {
    /// The kind.
    pub kind: ListKind,
    /// `None`: every namespace.
    pub namespace: Option<String>,
    /// A field selector (`metadata.name=shop`).
    pub fields: Option<String>,
}

impl Wanted {
    /// `kind` in every namespace.
    pub fn all(kind: ListKind) -> Self {
        Self {
            kind,
            namespace: None,
            fields: None,
        }
    }

    /// `kind` in `namespace` (or every namespace).
    pub fn in_namespace(kind: ListKind, namespace: Option<&str>) -> Self {
        Self {
            kind,
            namespace: namespace.map(str::to_owned),
            fields: None,
        }
    }

    /// Where the objects were read from, for messages: `pods in namespace shop`.
    pub fn describe(&self) -> String {
        let mut text = self.kind.resource().to_owned();
        match (&self.namespace, self.kind) {
            (_, ListKind::Namespaces) => {}
            (Some(namespace), _) => text.push_str(&format!(" in namespace {namespace}")),
            (None, _) => text.push_str(" in all namespaces"),
        }
        if let Some(fields) = &self.fields {
            text.push_str(&format!(" ({fields})"));
        }
        text
    }
}

/// Why the cluster could not be read: one line, naming the context, and the verb and the
/// resource where a request was refused.
#[derive(Debug, thiserror::Error)]
pub enum LiveError {
    /// No kubeconfig, or one that cannot be used.
    #[error("{0}")]
    Config(String),
    /// The API server cannot be reached.
    #[error("context {context}: cannot reach the API server at {server}: {error}")]
    Unreachable {
        /// The context.
        context: String,
        /// The server's URL.
        server: String,
        /// What happened.
        error: String,
    },
    /// The API server answered a request with an error.
    #[error("context {context}: cannot {verb} {resource}: {reason}")]
    Refused {
        /// The context.
        context: String,
        /// `list`.
        verb: &'static str,
        /// `pods in namespace shop`.
        resource: String,
        /// The status and the server's message, with a hint for 401 and 403.
        reason: String,
    },
}

/// A client for one context, and what the tools take from it.
pub struct Connection {
    client: Client,
    /// The context's name (`in-cluster` for the pod's service account).
    pub context: String,
    /// The context's namespace (`default` when it names none).
    pub namespace: String,
    /// The API server's URL.
    pub server: String,
}

impl fmt::Debug for Connection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Connection")
            .field("context", &self.context)
            .field("namespace", &self.namespace)
            .field("server", &self.server)
            .finish_non_exhaustive()
    }
}

/// Connects as kubectl would with `--kubeconfig` and `--context`.
pub async fn connect(
    kubeconfig: Option<&Path>,
    context: Option<&str>,
) -> Result<Connection, LiveError> {
    let read = match kubeconfig {
        Some(path) => Kubeconfig::read_from(path).map(Some).map_err(|error| {
            LiveError::Config(format!("kubeconfig {}: {error}", path.display()))
        })?,
        None => match Kubeconfig::read() {
            Ok(kubeconfig) => Some(kubeconfig),
            Err(error) => {
                // No kubeconfig at all: in a pod, its service account (as kubectl does).
                if context.is_none() && std::env::var_os("KUBECONFIG").is_none() {
                    None
                } else {
                    return Err(LiveError::Config(format!(
                        "kubeconfig {}: {error}",
                        default_kubeconfig_text()
                    )));
                }
            }
        },
    };
    let (mut config, context) = match read {
        Some(file) => {
            let name = context
                .map(str::to_owned)
                .or_else(|| file.current_context.clone())
                .ok_or_else(|| {
                    LiveError::Config(format!(
                        "kubeconfig {}: no current context; give --context",
                        kubeconfig
                            .map_or_else(default_kubeconfig_text, |p| p.display().to_string())
                    ))
                })?;
            check_context(&file, &name, || {
                kubeconfig.map_or_else(default_kubeconfig_text, |p| p.display().to_string())
            })?;
            let options = KubeConfigOptions {
                context: Some(name.clone()),
                ..KubeConfigOptions::default()
            };
            let config = kube::Config::from_custom_kubeconfig(file, &options)
                .await
                .map_err(|error| LiveError::Config(format!("context {name}: {error}")))?;
            (config, name)
        }
        None => {
            let config = kube::Config::incluster().map_err(|error| {
                LiveError::Config(format!(
                    "no kubeconfig ({}) and not in a pod ({error}): give --kubeconfig, or \
                     --objects FILE... to read kubectl's JSON instead",
                    default_kubeconfig_text()
                ))
            })?;
            (config, "in-cluster".to_owned())
        }
    };
    config.connect_timeout = Some(CONNECT_TIMEOUT);
    let server = config.cluster_url.to_string();
    let server = server.trim_end_matches('/').to_owned();
    let namespace = config.default_namespace.clone();
    let client = Client::try_from(config)
        .map_err(|error| LiveError::Config(format!("context {context}: {error}")))?;
    Ok(Connection {
        client,
        context,
        namespace,
        server,
    })
}

/// `Err` when `file` has no context `name`: the contexts it has, and the one meant when
/// the name is one letter or two off.
fn check_context(
    file: &Kubeconfig,
    name: &str,
    described: impl FnOnce() -> String,
) -> Result<(), LiveError> {
    match missing_context(file, name) {
        None => Ok(()),
        Some(why) => Err(LiveError::Config(format!(
            "kubeconfig {}: {why}",
            described()
        ))),
    }
}

/// When `file` has no context `name`, what to say: the contexts it has, and the one meant
/// when the name is a letter or two off (`no context "prd" (it has local, prod); did you mean
/// "prod"?`).
pub(crate) fn missing_context(file: &Kubeconfig, name: &str) -> Option<String> {
    if file.contexts.iter().any(|named| named.name == name) {
        return None;
    }
    let known: Vec<&str> = file.contexts.iter().map(|c| c.name.as_str()).collect();
    let hint = crate::suggest::closest(name, known.iter().copied())
        .map(|close| format!("; did you mean {close:?}?"))
        .unwrap_or_default();
    Some(format!(
        "no context {name:?} (it has {}){hint}",
        if known.is_empty() {
            "none".to_owned()
        } else {
            known.join(", ")
        }
    ))
}

/// The kubeconfig file and context a server watching the cluster reads, chosen as
/// [`connect`] (and kubectl) chooses them, for a Corefile's `kubeconfig FILE CONTEXT`: the
/// context named, else the current one; from `--kubeconfig`, else the first file of
/// `KUBECONFIG` that holds that context (kubectl merges them; a Corefile names one), else
/// `~/.kube/config`. `None` inside a pod with no kubeconfig: its service account, as a
/// Corefile with no connection option has it.
pub fn choose_kubeconfig(
    kubeconfig: Option<&Path>,
    context: Option<&str>,
) -> Result<Option<(PathBuf, String)>, LiveError> {
    let candidates: Vec<PathBuf> = match (kubeconfig, std::env::var_os("KUBECONFIG")) {
        (Some(path), _) => vec![path.to_owned()],
        (None, Some(paths)) if !paths.is_empty() => std::env::split_paths(&paths)
            .filter(|path| path.is_file())
            .collect(),
        _ => home_kubeconfig()
            .filter(|path| path.is_file())
            .into_iter()
            .collect(),
    };
    let described =
        || kubeconfig.map_or_else(default_kubeconfig_text, |path| path.display().to_string());
    if candidates.is_empty() {
        if kubeconfig.is_none()
            && context.is_none()
            && std::env::var_os("KUBERNETES_SERVICE_HOST").is_some()
        {
            return Ok(None);
        }
        return Err(LiveError::Config(format!(
            "no kubeconfig ({}) and not in a pod: give --kubeconfig, or --corefile, or \
             --objects FILE... to serve kubectl's JSON instead",
            described()
        )));
    }
    let mut files = Vec::new();
    for path in candidates {
        if !path.is_file() {
            return Err(LiveError::Config(format!(
                "kubeconfig {}: no such file",
                path.display()
            )));
        }
        let file = Kubeconfig::read_from(&path).map_err(|error| {
            LiveError::Config(format!("kubeconfig {}: {error}", path.display()))
        })?;
        files.push((path, file));
    }
    let name = context
        .map(str::to_owned)
        .or_else(|| {
            files
                .iter()
                .find_map(|(_, file)| file.current_context.clone())
        })
        .ok_or_else(|| {
            LiveError::Config(format!(
                "kubeconfig {}: no current context; give --context",
                described()
            ))
        })?;
    if let Some((path, _)) = files
        .iter()
        .find(|(_, file)| file.contexts.iter().any(|named| named.name == name))
    {
        return Ok(Some((path.clone(), name)));
    }
    let mut merged = Kubeconfig::default();
    for (_, file) in files {
        merged.contexts.extend(file.contexts);
    }
    // No file holds it: the error names those the files do hold.
    check_context(&merged, &name, described)?;
    Err(LiveError::Config(format!(
        "kubeconfig {}: no context {name:?}",
        described()
    )))
}

/// The context names of the kubeconfig kubectl reads with `--kubeconfig` (`None`: the files
/// of `KUBECONFIG`, merged, or `~/.kube/config`), in the file's order, and its current
/// context. For completing `--context`.
pub fn context_names(
    kubeconfig: Option<&Path>,
) -> Result<(Vec<String>, Option<String>), LiveError> {
    let file = match kubeconfig {
        Some(path) => Kubeconfig::read_from(path),
        None => Kubeconfig::read(),
    }
    .map_err(|error| LiveError::Config(format!("kubeconfig: {error}")))?;
    let names = file
        .contexts
        .into_iter()
        .map(|context| context.name)
        .collect();
    Ok((names, file.current_context))
}

/// Where kubectl looks without `--kubeconfig`, for messages.
fn default_kubeconfig_text() -> String {
    match std::env::var_os("KUBECONFIG") {
        Some(paths) => format!("KUBECONFIG={}", paths.to_string_lossy()),
        None => home_kubeconfig().map_or_else(
            || "~/.kube/config".to_owned(),
            |path| path.display().to_string(),
        ),
    }
}

fn home_kubeconfig() -> Option<PathBuf> {
    std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".kube/config"))
}

impl Connection {
    /// Lists `wanted` page by page: each page's JSON text (a `ServiceList` ...) goes to
    /// `page` with how many objects it held.
    pub async fn list(
        &self,
        wanted: &Wanted,
        mut page: impl FnMut(&str, usize),
    ) -> Result<(), LiveError> {
        let request = kube::core::Request::new(wanted.kind.path(wanted.namespace.as_deref()));
        let mut params = ListParams::default().limit(PAGE);
        if let Some(fields) = &wanted.fields {
            params = params.fields(fields);
        }
        loop {
            let http = request
                .list(&params)
                .map_err(|error| self.refused(wanted, &kube::Error::BuildRequest(error)))?;
            let text = self
                .client
                .request_text(http)
                .await
                .map_err(|error| self.refused(wanted, &error))?;
            let (count, next) = page_of(&text).map_err(|reason| LiveError::Refused {
                context: self.context.clone(),
                verb: "list",
                resource: wanted.describe(),
                reason,
            })?;
            page(&text, count);
            match next {
                Some(token) => params.continue_token = Some(token),
                None => return Ok(()),
            }
        }
    }

    fn refused(&self, wanted: &Wanted, error: &kube::Error) -> LiveError {
        let resource = wanted.describe();
        match error {
            kube::Error::Api(status) => {
                let code = status.code;
                let hint = match code {
                    401 => format!(
                        "; the credentials of context {} were refused (an expired token?)",
                        self.context
                    ),
                    403 => format!(
                        "; the user needs `list` on {} (deploy/tools/rbac.yaml grants what the tools read)",
                        wanted.kind.qualified()
                    ),
                    _ => String::new(),
                };
                LiveError::Refused {
                    context: self.context.clone(),
                    verb: "list",
                    resource,
                    reason: format!("{} {}: {}{hint}", code, status.reason, status.message),
                }
            }
            kube::Error::HyperError(_)
            | kube::Error::Service(_)
            | kube::Error::Auth(_)
            | kube::Error::TlsRequired => LiveError::Unreachable {
                context: self.context.clone(),
                server: self.server.clone(),
                error: error_chain(error),
            },
            other => LiveError::Refused {
                context: self.context.clone(),
                verb: "list",
                resource,
                reason: error_chain(other),
            },
        }
    }
}

/// An error and its causes, on one line.
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

/// How many items a list page holds and its continue token.
fn page_of(text: &str) -> Result<(usize, Option<String>), String> {
    #[derive(serde::Deserialize)]
    struct Page {
        #[serde(default)]
        metadata: PageMeta,
        #[serde(default)]
        items: Option<Vec<serde::de::IgnoredAny>>,
    }
    #[derive(serde::Deserialize, Default)]
    struct PageMeta {
        #[serde(default, rename = "continue")]
        next: Option<String>,
    }
    let page: Page = serde_json::from_str(text)
        .map_err(|error| format!("the API server's answer is not a list: {error}"))?;
    Ok((
        page.items.map_or(0, |items| items.len()),
        page.metadata.next.filter(|token| !token.is_empty()),
    ))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn paths_and_descriptions_name_the_resource_as_kubectl_does() {
        let cases = [
            (
                Wanted::all(ListKind::Namespaces),
                "/api/v1/namespaces",
                "namespaces",
            ),
            (
                Wanted::all(ListKind::Services),
                "/api/v1/services",
                "services in all namespaces",
            ),
            (
                Wanted::in_namespace(ListKind::EndpointSlices, Some("shop")),
                "/apis/discovery.k8s.io/v1/namespaces/shop/endpointslices",
                "endpointslices in namespace shop",
            ),
            (
                Wanted::in_namespace(ListKind::Pods, Some("shop")),
                "/api/v1/namespaces/shop/pods",
                "pods in namespace shop",
            ),
        ];
        for (wanted, path, described) in cases {
            assert_eq!(wanted.kind.path(wanted.namespace.as_deref()), path);
            assert_eq!(wanted.describe(), described);
        }
        let mut one = Wanted::all(ListKind::Namespaces);
        one.fields = Some("metadata.name=shop".into());
        assert_eq!(one.describe(), "namespaces (metadata.name=shop)");
    }

    #[test]
    fn a_page_says_how_many_items_it_holds_and_where_the_next_starts() {
        let page = r#"{"kind":"PodList","metadata":{"continue":"abc="},"items":[{},{}]}"#;
        assert_eq!(page_of(page).unwrap(), (2, Some("abc=".into())));
        let last = r#"{"kind":"PodList","metadata":{"resourceVersion":"7"},"items":[]}"#;
        assert_eq!(page_of(last).unwrap(), (0, None));
        let empty_token = r#"{"metadata":{"continue":""},"items":null}"#;
        assert_eq!(page_of(empty_token).unwrap(), (0, None));
        assert!(page_of("<html>").is_err());
    }
}
