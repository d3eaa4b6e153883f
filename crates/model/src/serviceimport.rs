//! ServiceImports of the Multi-Cluster Services API (`multicluster.x-k8s.io/v1alpha1`),
//! which the `multicluster` zones of the *kubernetes* plugin answer from, and the MCS labels
//! that tie an EndpointSlice to one.
//!
//! k8s-openapi has no type for this custom resource, so [`ServiceImportObject`] is the
//! object as the API server and `kubectl get -o json` write it, reduced to the fields read
//! here; [`service_import`] converts it as [`convert`](super::convert) converts the built-in
//! kinds, with the JSON path of any bad field.

use std::net::IpAddr;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::{Deserialize, Serialize};

use super::convert::{self, ConvertError};
use super::{ObjectKey, Protocol};

/// The label an MCS implementation puts on the EndpointSlices it imports: the
/// ServiceImport (in the slice's namespace) they belong to.
pub const LABEL_MCS_SERVICE_NAME: &str = "multicluster.kubernetes.io/service-name";

/// The label naming the cluster an imported EndpointSlice's endpoints are in.
pub const LABEL_MCS_SOURCE_CLUSTER: &str = "multicluster.kubernetes.io/source-cluster";

/// The API group and version of ServiceImports.
pub const API_VERSION: &str = "multicluster.x-k8s.io/v1alpha1";

/// A ServiceImport, as the *kubernetes* plugin reads it (CoreDNS `object.ServiceImport`).
#[derive(Debug, Clone, PartialEq)]
pub struct ServiceImport {
    /// namespace/name: the name it is answered under.
    pub key: ObjectKey,
    /// `spec.type`.
    pub import_type: ImportType,
    /// `spec.ips`: the cluster-set addresses (empty for a headless import).
    pub ips: Vec<IpAddr>,
    /// `spec.ports`, in spec order.
    pub ports: Vec<ImportPort>,
}

/// `spec.type` of a ServiceImport.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImportType {
    /// `ClusterSetIP` (also what an unset type is): answered with `spec.ips`.
    ClusterSetIp,
    /// `Headless`: answered with the endpoints of its imported EndpointSlices.
    Headless,
}

impl ImportType {
    /// The API spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ClusterSetIp => "ClusterSetIP",
            Self::Headless => "Headless",
        }
    }
}

/// One entry of `spec.ports`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImportPort {
    /// `name` (empty when unnamed).
    pub name: String,
    /// `protocol` (TCP when unset).
    pub protocol: Protocol,
    /// `port`.
    pub port: u16,
}

/// A ServiceImport as JSON: the fields the model reads; any other is ignored.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ServiceImportObject {
    /// `metadata`.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// `spec`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec: Option<ServiceImportSpec>,
}

/// `spec` of a ServiceImport.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ServiceImportSpec {
    /// `type`: `ClusterSetIP` or `Headless`.
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub type_: Option<String>,
    /// `ips`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ips: Option<Vec<String>>,
    /// `ports`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ports: Option<Vec<ServiceImportPort>>,
}

/// One entry of `spec.ports`, as JSON.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ServiceImportPort {
    /// `name`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// `protocol`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<String>,
    /// `port`.
    pub port: i64,
}

/// Converts a ServiceImport; a bad field is an error naming its path (`spec.ips[1]`).
pub fn service_import(object: &ServiceImportObject) -> Result<ServiceImport, ConvertError> {
    let key = convert::key(&object.metadata)?;
    let spec = object.spec.clone().unwrap_or_default();
    let import_type = match spec.type_.as_deref() {
        None | Some("" | "ClusterSetIP") => ImportType::ClusterSetIp,
        Some("Headless") => ImportType::Headless,
        Some(other) => {
            return Err(ConvertError::new(
                "spec.type",
                "ClusterSetIP or Headless",
                convert::quote(other),
            ));
        }
    };
    let ips = spec
        .ips
        .iter()
        .flatten()
        .enumerate()
        .map(|(index, ip)| convert::parse_ip(ip, &format!("spec.ips[{index}]")))
        .collect::<Result<Vec<_>, _>>()?;
    let ports = spec
        .ports
        .iter()
        .flatten()
        .enumerate()
        .map(|(index, port)| {
            let path = format!("spec.ports[{index}]");
            Ok(ImportPort {
                name: port.name.clone().unwrap_or_default(),
                protocol: convert::protocol(port.protocol.as_deref(), &format!("{path}.protocol"))?,
                port: convert::port_number(port.port, &format!("{path}.port"))?,
            })
        })
        .collect::<Result<Vec<_>, ConvertError>>()?;
    Ok(ServiceImport {
        key,
        import_type,
        ips,
        ports,
    })
}

/// The JSON of `import` (what the snapshot file keeps), which [`service_import`] reads back
/// as it was.
pub fn to_object(import: &ServiceImport) -> ServiceImportObject {
    ServiceImportObject {
        metadata: ObjectMeta {
            name: Some(import.key.name.to_string()),
            namespace: Some(import.key.namespace.to_string()),
            ..ObjectMeta::default()
        },
        spec: Some(ServiceImportSpec {
            type_: Some(import.import_type.as_str().to_owned()),
            ips: Some(import.ips.iter().map(ToString::to_string).collect()),
            ports: Some(
                import
                    .ports
                    .iter()
                    .map(|port| ServiceImportPort {
                        name: (!port.name.is_empty()).then(|| port.name.clone()),
                        protocol: Some(port.protocol.as_str().to_owned()),
                        port: i64::from(port.port),
                    })
                    .collect(),
            ),
        }),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use serde_json::json;

    use super::*;

    fn convert(value: serde_json::Value) -> Result<ServiceImport, ConvertError> {
        service_import(&serde_json::from_value(value).unwrap())
    }

    #[test]
    fn converts_the_fields_read() {
        let import = convert(json!({
            "metadata": {"name": "web", "namespace": "shop", "labels": {"a": "b"}},
            "spec": {
                "type": "ClusterSetIP",
                "ips": ["10.42.0.1", "fd00::1"],
                "ports": [{"name": "http", "protocol": "TCP", "port": 80, "appProtocol": "h2c"},
                          {"port": 53, "protocol": "UDP"}],
                "sessionAffinity": "None"
            },
            "status": {"clusters": [{"cluster": "east"}]}
        }))
        .unwrap();
        assert_eq!(import.key, ObjectKey::new("shop", "web"));
        assert_eq!(import.import_type, ImportType::ClusterSetIp);
        assert_eq!(import.ips.len(), 2);
        assert_eq!(
            import.ports,
            [
                ImportPort {
                    name: "http".into(),
                    protocol: Protocol::Tcp,
                    port: 80
                },
                ImportPort {
                    name: String::new(),
                    protocol: Protocol::Udp,
                    port: 53
                }
            ]
        );
        let back = service_import(&to_object(&import)).unwrap();
        assert_eq!(back, import);
    }

    #[test]
    fn defaults() {
        let import = convert(json!({"metadata": {"name": "db"}})).unwrap();
        assert_eq!(import.key, ObjectKey::new("default", "db"));
        assert_eq!(import.import_type, ImportType::ClusterSetIp);
        assert!(import.ips.is_empty() && import.ports.is_empty());
        let headless = convert(json!({"metadata": {"name": "db"}, "spec": {"type": "Headless"}}));
        assert_eq!(headless.unwrap().import_type, ImportType::Headless);
    }

    #[test]
    fn bad_fields_name_their_path() {
        let cases = [
            (
                json!({"metadata": {}}),
                "metadata.name",
                "the object's name",
            ),
            (
                json!({"metadata": {"name": "a"}, "spec": {"type": "LoadBalancer"}}),
                "spec.type",
                "ClusterSetIP or Headless",
            ),
            (
                json!({"metadata": {"name": "a"}, "spec": {"ips": ["10.0.0.1", "ten"]}}),
                "spec.ips[1]",
                "an IP address",
            ),
            (
                json!({"metadata": {"name": "a"}, "spec": {"ports": [{"port": 0}]}}),
                "spec.ports[0].port",
                "a port number 1-65535",
            ),
            (
                json!({"metadata": {"name": "a"}, "spec": {"ports": [{"port": 1, "protocol": "ICMP"}]}}),
                "spec.ports[0].protocol",
                "TCP, UDP or SCTP",
            ),
        ];
        for (value, path, expected) in cases {
            let error = convert(value).unwrap_err();
            assert_eq!(
                (error.path.as_str(), error.expected.as_str()),
                (path, expected)
            );
        }
    }
}
