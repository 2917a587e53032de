public import ResilienceCore

/// One SIP account: where to register, as whom, and what to keep subscribed.
///
/// `description` never shows the password.
public struct SIPAccount: Hashable, Sendable, CustomStringConvertible {
    /// Identifier used in service ids (`"<name>.registration"`) and logs.
    public var name: String
    /// Registrar (outbound proxy) host: an IP literal or a name, resolved as RFC 3263 says
    /// (NAPTR, SRV, then A/AAAA; see ``registrarPortIsExplicit``).
    public var registrarHost: String
    /// The registrar's port; setting it makes it explicit.
    public var registrarPort: Int {
        didSet { registrarPortIsExplicit = true }
    }
    /// Whether the port was given: then a name gets only A/AAAA lookups (RFC 3263 §4.2); without
    /// one, its NAPTR and SRV records choose the servers, their ports and their order.
    public var registrarPortIsExplicit: Bool
    public var transport: SIPTransportKind
    public var user: String
    /// SIP domain of the address-of-record (`sip:user@domain`); also the digest realm usually.
    public var domain: String
    /// Digest user name when it differs from `user`.
    public var authUser: String?
    public var password: String
    /// Requested registration lifetime in seconds.
    public var expires: Int
    /// RFC 5626 outbound: `+sip.instance` URN (e.g. `urn:uuid:...`) and `reg-id`.
    public var instanceID: String?
    public var regID: Int?
    /// RFC 5626 §4.2: 2 keeps a second flow, registered with the next `reg-id` on the next
    /// registrar target in RFC 3263 order (another edge proxy), so the death of one server costs
    /// no unreachability; 1 (the default) keeps one. Needs ``instanceID`` and ``regID``.
    public var outboundFlows = 1
    /// RFC 8599 push parameters for the Contact URI; nil while no push token is known.
    public var push: PushParameters?
    /// Event packages this account keeps subscribed (to its own AOR unless a target is given).
    public var subscriptions: [SubscriptionTarget]
    /// Whether the account publishes its own presence (service `<name>.presence-publish`).
    public var publishesPresence: Bool
    /// How often the flow to the registrar gets a ping (see ``flowPingInterval``).
    public var flowPing: FlowPingSetting
    /// Certificate checks of a `transport: tls` account (ignored otherwise).
    public var tls: SIPTLSSettings
    /// How long an incoming call rings before it is ended with 480 (RFC 3261 §13.3.1.1);
    /// clamped to 1 s – 1 h. Common phones ring for about 60 s.
    public var ringingTimeout: Duration = .seconds(60)
    /// Whether a flow ping asks the registrar for the account's bindings (a REGISTER without
    /// Contact, RFC 3261 §10.2.3) once they have gone unconfirmed for three quarters of the
    /// flow-ping interval, in turns with the other accounts bound at the same registrar (one
    /// query per 3/4 interval there), so a registrar that forgot them is noticed; off, pings only
    /// prove the flow (a registrar with a persistent location table saves the requests).
    public var checksBindings = true

    public init(
        name: String, registrarHost: String, registrarPort: Int? = nil, transport: SIPTransportKind = .udp,
        user: String, domain: String, authUser: String? = nil, password: String, expires: Int = 600,
        instanceID: String? = nil, regID: Int? = nil, push: PushParameters? = nil,
        subscriptions: [SubscriptionTarget] = [], publishesPresence: Bool = false,
        flowPing: FlowPingSetting = .transportDefault, tls: SIPTLSSettings = SIPTLSSettings()
    ) {
        self.name = name
        self.registrarHost = registrarHost
        self.registrarPort = registrarPort ?? transport.defaultPort
        self.registrarPortIsExplicit = registrarPort != nil
        self.transport = transport
        self.user = user
        self.domain = domain
        self.authUser = authUser
        self.password = password
        self.expires = expires
        self.instanceID = instanceID
        self.regID = regID
        self.push = push
        self.subscriptions = subscriptions
        self.publishesPresence = publishesPresence
        self.flowPing = flowPing
        self.tls = tls
    }

    /// The flow-ping interval this account asks for: the transport's default (UDP 30 s, which
    /// outlives common NAT bindings; TCP 120 s, RFC 5626 §4.4.1's suggestion for streams), an
    /// explicit one, or nil when flow pings are off. A registrar's `Flow-Timer` overrides it
    /// (see ``RegistrationStatus/flowPingInterval``).
    public var flowPingInterval: Duration? {
        switch flowPing {
        case .transportDefault: transport == .udp ? .seconds(30) : .seconds(120)
        case .off: nil
        case .every(let interval): interval
        }
    }

    public var addressOfRecord: String { "sip:\(user)@\(domain)" }

    public var registrationService: ServiceID { ServiceID("\(name).registration") }

    public var presencePublishService: ServiceID { ServiceID("\(name).presence-publish") }

    public var description: String {
        "SIPAccount(\(name): \(addressOfRecord) via \(transport.rawValue):\(registrarHost):\(registrarPort), "
            + "expires \(expires), password <redacted>)"
    }
}

/// Whether and how often an account keeps its flow alive.
public enum FlowPingSetting: Hashable, Sendable {
    /// UDP 30 s, TCP 120 s.
    case transportDefault
    case off
    case every(Duration)
}

/// RFC 8599 Contact URI parameters for push notification.
public struct PushParameters: Hashable, Sendable {
    /// `pn-provider`, e.g. `apns` or `fcm`.
    public var provider: String
    /// `pn-prid`: the device's push token.
    public var prid: String
    /// `pn-param`, e.g. the APNs topic.
    public var param: String?

    public init(provider: String, prid: String, param: String? = nil) {
        self.provider = provider
        self.prid = prid
        self.param = param
    }

    var uriParameters: String {
        ";pn-provider=\(provider);pn-prid=\(prid)" + (param.map { ";pn-param=\($0)" } ?? "")
    }
}

/// One subscription an account keeps.
public struct SubscriptionTarget: Hashable, Sendable {
    public var package: EventPackage
    /// Resource URI; nil means the account's own address-of-record.
    public var resource: String?
    public var expires: Int

    public init(package: EventPackage, resource: String? = nil, expires: Int = 600) {
        self.package = package
        self.resource = resource
        self.expires = expires
    }

    /// The service id for this subscription of `account`.
    public func service(of account: SIPAccount) -> ServiceID {
        let target = resource.map { "." + $0 } ?? ""
        return ServiceID("\(account.name).subscription.\(package.rawValue)\(target)")
    }
}
