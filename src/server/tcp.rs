//! TCP, through hickory-server: it owns connections, framing and idle timeouts, and hands
//! each message to [`Handler::respond`], the path UDP takes.

use std::sync::Arc;

use arc_swap::ArcSwap;

use hickory_proto::op::{Header, HeaderCounts, Message, MessageType, Metadata, ResponseCode};
use hickory_proto::rr::Record;
use hickory_server::net::runtime::Time;
use hickory_server::server::{Request, RequestHandler, ResponseHandler, ResponseInfo};
use hickory_server::zone_handler::MessageResponseBuilder;

use super::{Handler, Outcome, Transport};

/// How many records go in one message of a zone transfer.
const TRANSFER_CHUNK: usize = 500;

/// Adapts [`Handler`] to hickory-server's request handler.
#[derive(Debug, Clone)]
pub(crate) struct TcpHandler(pub(crate) Arc<ArcSwap<Handler>>);

#[async_trait::async_trait]
impl RequestHandler for TcpHandler {
    async fn handle_request<R: ResponseHandler, T: Time>(
        &self,
        request: &Request,
        mut response: R,
    ) -> ResponseInfo {
        let mut out = Vec::new();
        // The handler of the running configuration; a reload swaps it between two queries.
        let handler = self.0.load_full();
        let outcome = handler.respond(request.as_slice(), request.src(), Transport::Tcp, &mut out);
        let sent = match outcome {
            Outcome::Reply => send_bytes(request, &out, &mut response).await,
            Outcome::Forward(pending) => {
                handler.complete(pending, &mut out).await;
                send_bytes(request, &out, &mut response).await
            }
            Outcome::Transfer(records) => send_transfer(request, &records, &mut response).await,
            Outcome::Drop => None,
        };
        sent.unwrap_or_else(|| server_failure(request))
    }
}

/// Sends a reply the handler wrote as bytes: decoded and handed to hickory-server, which
/// encodes it for the connection.
async fn send_bytes<R: ResponseHandler>(
    request: &Request,
    bytes: &[u8],
    response: &mut R,
) -> Option<ResponseInfo> {
    let message = match Message::from_vec(bytes) {
        Ok(message) => message,
        Err(error) => {
            tracing::error!(%error, "reply does not decode");
            return None;
        }
    };
    let mut builder = MessageResponseBuilder::new(&request.queries, None);
    if let Some(edns) = &message.edns {
        builder.edns(edns);
    }
    let reply = builder.build(
        message.metadata,
        message.answers.iter(),
        message.authorities.iter(),
        std::iter::empty(),
        message.additionals.iter(),
    );
    match response.send_response(reply).await {
        Ok(info) => Some(info),
        Err(error) => {
            tracing::debug!(%error, "tcp send");
            None
        }
    }
}

/// Sends a zone transfer: the records over as many messages as they need.
async fn send_transfer<R: ResponseHandler>(
    request: &Request,
    records: &[Record],
    response: &mut R,
) -> Option<ResponseInfo> {
    let mut metadata = Metadata::response_from_request(&request.metadata);
    metadata.authoritative = true;
    let mut last = None;
    for chunk in records.chunks(TRANSFER_CHUNK) {
        let reply = MessageResponseBuilder::new(&request.queries, None).build(
            metadata,
            chunk.iter(),
            std::iter::empty(),
            std::iter::empty(),
            std::iter::empty(),
        );
        match response.send_response(reply).await {
            Ok(info) => last = Some(info),
            Err(error) => {
                tracing::warn!(%error, "zone transfer interrupted");
                return None;
            }
        }
    }
    last
}

fn server_failure(request: &Request) -> ResponseInfo {
    let mut metadata = Metadata::new(
        request.metadata.id,
        MessageType::Response,
        request.metadata.op_code,
    );
    metadata.response_code = ResponseCode::ServFail;
    ResponseInfo::from(Header {
        metadata,
        counts: HeaderCounts::default(),
    })
}
