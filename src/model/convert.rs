//! Conversion from `k8s-openapi` types into the model. Parse, don't validate: a bad IP or
//! port is an error here, never later.
