internal import Logging
public import ResilienceCore

/// The registration usage of an account (RFC 3261 §10).
struct RegistrationState {
    let callID = randomToken()
    let fromTag = randomToken()
    var cseq: UInt32 = 0
    /// Requested lifetime in seconds (raised by 423 Min-Expires).
    var expires: Int
    /// The Contact URI of the current binding.
    var contact: String?
    /// Contacts of earlier addresses whose bindings must still be removed.
    var staleContacts: [String] = []
    /// The lifetime the registrar granted in the last 2xx.
    var granted: Int?
    /// A REGISTER of the current Contact went unanswered (timeout, flow closed): the registrar
    /// may hold a binding nobody confirmed. Cleared by a 2xx.
    var outcomeUnknown = false
    /// The registrar's `Flow-Timer` (RFC 5626 §5.4) from the last 2xx, in seconds.
    var flowTimer: Int?
    /// The flow the last 2xx to a REGISTER came through. A keep-alive proves only this flow:
    /// on any other (opened since, after a loss) the registration is re-established instead.
    var registeredFlow: SIPTransport?
    /// The flow's public `host:port` per the last 2xx's top Via (RFC 3581), and when a
    /// keep-alive's view of it calls for a REGISTER; see SIPUserAgent+NAT.
    var natWatch = NATRebindingWatch()
    /// The registrar keeps flows (RFC 5626): the UDP keep-alive is STUN.
    var keepsFlows = false
    /// When the binding was last seen at the registrar, and whether the next ping asks again.
    var bindingCheck = BindingCheck()

    init(expires: Int) { self.expires = expires }
}

/// What the registrar last confirmed.
public struct RegistrationStatus: Hashable, Sendable {
    /// The Contact URI of the current binding; nil when not registered.
    public var contact: String?
    /// Seconds the registrar granted.
    public var expires: Int?
    /// Contacts of earlier addresses not yet removed.
    public var staleContacts: [String]
    /// How often the flow needs a ping: the registrar's `Flow-Timer` from the last 2xx
    /// (RFC 5626 §5.4) when it sent one, else the account's setting; nil when the account turned
    /// flow pings off or nothing is registered.
    public var flowPingInterval: Duration?

    public init(
        contact: String? = nil, expires: Int? = nil, staleContacts: [String] = [], flowPingInterval: Duration? = nil
    ) {
        self.contact = contact
        self.expires = expires
        self.staleContacts = staleContacts
        self.flowPingInterval = flowPingInterval
    }
}

extension SIPUserAgent {
    public var registrationStatus: RegistrationStatus {
        let registered = registration.granted != nil
        let flowPing = account.flowPingInterval.map { setting in
            registration.flowTimer.map { Duration.seconds(min($0, 3600)) } ?? setting
        }
        return RegistrationStatus(
            contact: registered ? registration.contact : nil, expires: registration.granted,
            staleContacts: registration.staleContacts, flowPingInterval: registered ? flowPing : nil)
    }

    /// Whether push notification can wake this client (RFC 8599): false while no token is known,
    /// which a client shows as "push service not available".
    public var isPushAvailable: Bool { push != nil }

    /// Sets (or clears) the push parameters. The next `register` binds a Contact with the new
    /// `pn-prid` and removes the binding that carried the old one.
    public func setPushParameters(_ parameters: PushParameters?) {
        if parameters != push { logger.info("sip.push-token-changed", metadata: ["available": "\(parameters != nil)"]) }
        push = parameters
    }

    /// Registers (or refreshes) the Contact for the current path on the current registrar target
    /// (`register(path:)` moves between targets). When the address changed, the same REGISTER
    /// removes the old binding (`expires=0`).
    /// - Throws: `PluginError`: `retryAfter` for 503 with Retry-After, permanent for 4xx other
    ///   than 408/423/480, permanent for rejected credentials.
    func registerOnCurrentTarget(path: NetworkPath) async throws {
        let flow = try await flow(for: path)
        // Superseded while the flow opened: the newer action binds, this one must not touch the state.
        try Task.checkCancellation()
        let contact = contactURI(on: flow)
        if let previous = registration.contact, previous != contact, !registration.staleContacts.contains(previous) {
            registration.staleContacts.append(previous)
        }
        registration.contact = contact
        for _ in 0..<2 {
            var contacts = ["<\(contact)>;expires=\(registration.expires)\(outboundParameters)"]
            contacts += registration.staleContacts.map { "<\($0)>;expires=0" }
            let response: SIPMessage
            do {
                response = try await sendRegister(contacts: contacts, expires: registration.expires, over: flow)
            } catch {
                registration.outcomeUnknown = true
                throw error
            }
            switch response.status ?? 0 {
            case 200..<300:
                registration.outcomeUnknown = false
                registration.registeredFlow = flow
                registration.granted = grantedExpiry(in: response, for: contact) ?? registration.expires
                registration.flowTimer = response.flowTimer
                noteNAT(from: response, on: flow)
                registration.staleContacts.removeAll()
                registration.bindingCheck.confirmed(at: clock.now)
                watchBinding(at: flow)
                logger.info(
                    "sip.registered", metadata: ["contact": "\(contact)", "expires": "\(registration.granted ?? 0)"])
                return
            case 423:
                guard let minimum = response.minExpires, minimum > registration.expires
                else { throw PluginError.permanent("423 without a usable Min-Expires") }
                logger.notice("sip.min-expires", metadata: ["min-expires": "\(minimum)"])
                registration.expires = minimum
            default:
                throw Self.failure(response, "REGISTER")
            }
        }
        throw PluginError("REGISTER: 423 twice")
    }

    /// Removes bindings of earlier addresses that the last REGISTER could not remove.
    public func unregisterStaleContacts(path: NetworkPath) async throws {
        guard !registration.staleContacts.isEmpty else { return }
        let flow = try await flow(for: path)
        let stale = registration.staleContacts
        let response = try await sendRegister(contacts: stale.map { "<\($0)>;expires=0" }, expires: nil, over: flow)
        guard let status = response.status, (200..<300).contains(status) else {
            throw Self.failure(response, "REGISTER (remove old contact)")
        }
        registration.staleContacts.removeAll { stale.contains($0) }
    }

    /// Removes this UA's bindings (current and stale), e.g. on shutdown. The current Contact is
    /// included only when the registrar may hold it (a 2xx bound it, or a REGISTER went
    /// unanswered): one it only ever refused (503, 403) is not "unregistered" against a registrar
    /// that would refuse that too.
    public func unregister(path: NetworkPath) async throws {
        await unregisterSecondFlow()
        let mayBeBound = registration.granted != nil || registration.outcomeUnknown
        let contacts = ((mayBeBound ? [registration.contact] : []).compactMap(\.self) + registration.staleContacts)
        guard !contacts.isEmpty else {
            logger.debug("sip.unregister-skipped", metadata: ["reason": "nothing bound"])
            return
        }
        let flow = try await flow(for: path)
        let response = try await sendRegister(contacts: contacts.map { "<\($0)>;expires=0" }, expires: 0, over: flow)
        guard let status = response.status, (200..<300).contains(status) else {
            throw Self.failure(response, "REGISTER (unregister)")
        }
        registration.contact = nil
        registration.granted = nil
        registration.flowTimer = nil
        registration.registeredFlow = nil
        registration.staleContacts.removeAll()
        registration.bindingCheck.forget()
        flows?.bindingWatch.leave(ObjectIdentifier(self))
        logger.info("sip.unregistered")
    }

    func sendRegister(contacts: [String], expires: Int?, over flow: SIPTransport) async throws -> SIPMessage {
        let request = registerRequest(
            contacts: contacts, expires: expires, callID: registration.callID, fromTag: registration.fromTag)
        return try await exchange(request, uri: "sip:\(account.domain)", over: flow) {
            registration.cseq += 1
            return registration.cseq
        }
    }

    /// A REGISTER of the account's address of record for one registration usage (its Call-ID
    /// and From tag); `CSeq` is set when it is sent.
    func registerRequest(contacts: [String], expires: Int?, callID: String, fromTag: String) -> SIPMessage {
        let aor = account.addressOfRecord
        var request = SIPMessage.request("REGISTER", uri: "sip:\(account.domain)")
        request.headers.add("From", "<\(aor)>;tag=\(fromTag)")
        request.headers.add("To", "<\(aor)>")
        request.headers.add("Call-ID", callID)
        request.headers.add("CSeq", "0 REGISTER")
        for contact in contacts { request.headers.add("Contact", contact) }
        if let expires { request.headers.add("Expires", "\(expires)") }
        // RFC 5626 outbound needs a reg-id; an instance alone (kept across restarts) only
        // identifies the device, so the registrar replaces its binding.
        request.headers.add("Supported", account.regID == nil ? "path" : "path, outbound")
        request.headers.add("User-Agent", "NetResilience")
        return request
    }

    /// `sip:user@host:port` of the flow, with `transport=tcp|tls` and RFC 8599 push parameters.
    func contactURI(on flow: SIPTransport) -> String {
        let transport = flow.kind.isStream ? ";transport=\(flow.kind.rawValue)" : ""
        return "sip:\(account.user)@\(flow.sentBy)\(transport)\(push?.uriParameters ?? "")"
    }

    /// RFC 5626 Contact header parameters.
    var outboundParameters: String {
        guard let instance = account.instanceID else { return "" }
        return ";+sip.instance=\"<\(instance)>\"" + (account.regID.map { ";reg-id=\($0)" } ?? "")
    }

    func grantedExpiry(in response: SIPMessage, for contact: String) -> Int? {
        let key = Self.bindingKey(contact)
        for value in response.headers.listValues("Contact") where Self.bindingKey(extractURI(value)) == key {
            if let seconds = SIPParameters.parse(afterFirstSemicolon: value).seconds("expires") { return seconds }
        }
        return response.expires
    }

    /// `user@host:port` lower-cased, the part of a Contact URI that identifies a binding.
    static func bindingKey(_ uri: String) -> String {
        let withoutScheme = uri.hasPrefix("sip:") ? String(uri.dropFirst(4)) : uri
        return String(withoutScheme.prefix { $0 != ";" && $0 != ">" }).lowercased()
    }

    /// A ``PluginError`` for a final non-2xx response.
    static func failure(_ response: SIPMessage, _ what: String) -> PluginError {
        let status = response.status ?? 0
        let reason: String
        // The reason phrase is the peer's text: it reaches logs through the error, escaped.
        if case .response(_, let text) = response.startLine {
            reason = LogText.escaped(text, limit: 64)
        } else {
            reason = ""
        }
        let message = "\(what) failed: \(status) \(reason)"
        let retryAfter = response.retryAfter
        switch status {
        case 408, 480, 500..<600: return PluginError(message, isRetryable: true, retryAfter: retryAfter)
        default: return PluginError(message, isRetryable: false, retryAfter: retryAfter)
        }
    }
}
