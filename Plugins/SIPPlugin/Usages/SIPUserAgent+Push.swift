import Logging

extension SIPUserAgent {
    /// Closes the flow without removing the binding (RFC 8599 asleep: the registrar, a push proxy,
    /// keeps the binding and pushes when it needs the device).
    ///
    /// Invariants: nothing is sent and no flow loss is reported (the agent closed it on purpose);
    /// the next action (the REGISTER a push causes) opens a new flow; the inbound stream stays.
    public func releaseFlow() async {
        opening = nil
        guard let current = transport else { return }
        logger.info("sip.flow-released", metadata: ["address": "\(current.localHost)"])
        transport = nil
        table.flowClosed(ObjectIdentifier(current))
        await current.close(graceful: false)
    }
}
