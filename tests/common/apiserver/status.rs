//! `v1` Status bodies, and the Status the real server answers each injected failure code with.

use serde_json::{Value, json};

use super::{Kind, Request, Verb};

/// A `v1` Status body.
pub(super) fn status_body(code: u16, reason: &str, message: &str, details: Option<Value>) -> Value {
    let mut status = json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    });
    if let Some(details) = details {
        status["details"] = details;
    }
    status
}

/// The Status the real server answers `code` with, for an injected failure.
pub(super) fn injected_status(code: u16, request: &Request) -> Value {
    let resource = request.kind.map_or("", Kind::plural);
    let (reason, message) = match code {
        400 => ("BadRequest", "the request is invalid".to_owned()),
        401 => ("Unauthorized", "Unauthorized".to_owned()),
        403 => {
            let verb = match request.verb {
                Verb::List => "list",
                Verb::Watch => "watch",
                Verb::Get => "get",
                Verb::Other => "get",
            };
            let group = request.kind.map_or("", Kind::group);
            let scope = match &request.namespace {
                Some(ns) => format!("in the namespace \"{ns}\""),
                None => "at the cluster scope".to_owned(),
            };
            (
                "Forbidden",
                format!(
                    "{resource} is forbidden: User \"system:serviceaccount:kube-system:coredns\" \
                     cannot {verb} resource \"{resource}\" in API group \"{group}\" {scope}"
                ),
            )
        }
        404 => (
            "NotFound",
            "the server could not find the requested resource".to_owned(),
        ),
        409 => ("Conflict", "the object has been modified".to_owned()),
        410 => (
            "Expired",
            "The resourceVersion for the provided list is too old.".to_owned(),
        ),
        429 => (
            "TooManyRequests",
            "Too many requests, please try again later.".to_owned(),
        ),
        500 => (
            "InternalError",
            "Internal error occurred: injected failure".to_owned(),
        ),
        503 => (
            "ServiceUnavailable",
            "the server is currently unable to handle the request".to_owned(),
        ),
        504 => (
            "Timeout",
            "Timeout: request did not complete within the allotted timeout".to_owned(),
        ),
        _ => ("", format!("injected failure {code}")),
    };
    status_body(code, reason, &message, None)
}

pub(super) fn bad_request(message: &str) -> (u16, Value) {
    (400, status_body(400, "BadRequest", message, None))
}
