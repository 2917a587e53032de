/// Requests from the peer, served in arrival order through their server transactions.
extension SIPUserAgent {
    /// The ordered inbound stream's sink; starts the task that serves it when none runs.
    func inboundSink() -> AsyncStream<InboundRequest>.Continuation {
        if let inboundSession { return inboundSession.sink }
        let (requests, sink) = AsyncStream.makeStream(of: InboundRequest.self, bufferingPolicy: .bufferingOldest(64))
        let task = Task { [weak self] in
            for await request in requests { await self?.handle(inbound: request) }
        }
        inboundSession = (sink, task)
        return sink
    }

    /// Serves one inbound request, in arrival order; answers go through its server transaction.
    /// This is the one point where requests enter the usages: INVITE, ACK, BYE, CANCEL and UPDATE
    /// to the calls (``handleCallRequest(_:transaction:)``), NOTIFYs to subscriptions, a MESSAGE
    /// outside a dialog to ``messages`` (200), everything else answered at once.
    func handle(inbound request: InboundRequest) async {
        if await handleCallRequest(request.message, transaction: request.transaction) { return }
        let transaction = request.transaction
        let clock = self.clock
        let reply: @Sendable (SIPMessage) -> Void = { transaction?.respond($0, at: clock.now) }
        if request.message.method?.uppercased() == "NOTIFY" {
            received(request: request.message, reply: reply)
        } else if request.message.method?.uppercased() == "MESSAGE", request.message.tag(in: "To") == nil {
            reply(receivedMessage(request.message))
        } else if let answer = Self.immediateAnswer(to: request.message) {
            reply(answer)
        }
    }

    /// The methods this agent accepts as a UAS, for `Allow` (RFC 3261 §20.5).
    static let allowedMethods = "INVITE, ACK, CANCEL, BYE, UPDATE, NOTIFY, OPTIONS, MESSAGE"

    /// Answers to the requests no usage takes (RFC 3261 §8.2.1): nothing to ACK; 200 with `Allow` to
    /// OPTIONS; 481 to CANCEL and BYE (there is nothing to cancel or end); 405 with `Allow` to a
    /// method SIP defines that this agent does not serve (REFER, INFO, ..., and a MESSAGE within
    /// a dialog: ``handle(inbound:)`` serves the others); 501 to a method it does not know.
    nonisolated static func immediateAnswer(to request: SIPMessage) -> SIPMessage? {
        let method = request.method?.uppercased() ?? ""
        var answer: SIPMessage
        switch method {
        case "ACK": return nil
        case "OPTIONS": answer = request.makeResponse(status: 200, reason: "OK", toTag: randomToken())
        // No INVITE server transaction or dialog exists to cancel or end (§9.2, §15.1.2).
        case "CANCEL", "BYE": return request.makeResponse(status: 481, reason: "Call/Transaction Does Not Exist")
        case "INVITE", "REGISTER", "SUBSCRIBE", "PUBLISH", "MESSAGE", "INFO", "UPDATE", "REFER", "PRACK":
            answer = request.makeResponse(status: 405, reason: "Method Not Allowed", toTag: randomToken())
        default: return request.makeResponse(status: 501, reason: "Not Implemented", toTag: randomToken())
        }
        answer.headers.add("Allow", allowedMethods)
        return answer
    }
}
