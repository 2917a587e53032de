/// One server transaction as the transaction user holds it: answer through it, never around it,
/// so a retransmitted request gets the same answer.
struct ServerTransaction: Sendable {
    let key: ServerTransactionTable.Key
    let table: ServerTransactionTable

    /// Sends `response` unless a final response was sent already (an INVITE transaction in
    /// Accepted also passes the TU's retransmitted 2xx).
    func respond(_ response: SIPMessage, at now: ContinuousClock.Instant) {
        table.respond(key, with: response, at: now)
    }
}

/// An inbound request with the server transaction that answers it, in arrival order. An ACK
/// for a 2xx has none (it is answered by nothing, §17.2.1): the dialog layer takes it.
struct InboundRequest: Sendable {
    let message: SIPMessage
    let transaction: ServerTransaction?
}
