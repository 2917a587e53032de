/// How a ``LabRegistrar`` starts: the digest algorithm it challenges with, optionally a TLS listener,
/// its memory, and whether its call proxy record-routes.
///
/// Invariant: ``digestAlgorithm`` is one of ``digestAlgorithms``; ``LabRegistrar`` refuses any other
/// with ``NetworkLabError/Code/invalidRequest`` (it is written into Kamailio's configuration).
public struct RegistrarOptions: Hashable, Sendable {
    /// The digest algorithms Kamailio can challenge with: `""` is MD5 without an `algorithm` parameter.
    public static let digestAlgorithms: Set<String> = ["", "MD5", "SHA-256"]
    /// The port of the TLS listener, on the registrar's IPv4 address.
    public static let tlsPort = 5061

    /// The algorithm of the registrar's digest challenges.
    public var digestAlgorithm: String
    /// The text of Kamailio's `tls.cfg` (server certificate and key, whether a client certificate is
    /// required); with it the registrar also listens for TLS on ``tlsPort`` (Debian `kamailio-tls-modules`).
    public var tlsConfiguration: String?

    /// Kamailio's shared memory in MiB (`-m`), clamped to 8...4096: 32 holds a few hundred
    /// bindings; near 2,000 bindings it runs out (a scale bench wants 256).
    public var sharedMemoryMegabytes: Int
    /// Each Kamailio process's private memory in MiB (`-M`), clamped to 1...1024.
    public var privateMemoryMegabytes: Int
    /// Whether the proxy record-routes a new INVITE (RFC 3261 §16.6 step 4): then every in-dialog
    /// request of the call passes through it; without it they go straight to the parties'
    /// Contacts (a proxy that stays out of the dialog).
    public var recordRoute: Bool
    /// Kamailio's UDP worker processes (`children`), clamped to 1...8. With one, every datagram of
    /// a socket is read and relayed in arrival order; with more, two requests sent back to back
    /// (an ACK and the BYE after it) may leave the proxy in the other order, as UDP allows but a
    /// scripted far end (sipp) does not tolerate. Default 1; a load bench wants more.
    public var udpWorkers: Int
    /// `ADDRESS:PORT` of a push service (``LabPushService``): with it the registrar is also an
    /// RFC 8599 push proxy (`RegistrarConfig+Push.swift`: tsilo, msilo, http_client).
    public var pushService: String?
    /// Whether calls' media goes through rtpengine (Debian `rtpengine`, user-space forwarding) beside
    /// Kamailio, which rewrites every SDP of a call with its `rtpengine` module (``LabMediaRelay``).
    public var mediaRelay = false
    /// NAT handling (nathelper, STUN on the SIP port, a `Flow-Timer`: ``RegistrarNAT``); nil: none,
    /// the registrar takes every Contact as it is.
    public var nat: RegistrarNAT? = nil

    public init(
        digestAlgorithm: String = "", tlsConfiguration: String? = nil, sharedMemoryMegabytes: Int = 32,
        privateMemoryMegabytes: Int = 4, recordRoute: Bool = true, udpWorkers: Int = 1, pushService: String? = nil
    ) {
        self.pushService = pushService
        self.udpWorkers = min(max(udpWorkers, 1), 8)
        self.digestAlgorithm = digestAlgorithm
        self.tlsConfiguration = tlsConfiguration
        self.sharedMemoryMegabytes = sharedMemoryMegabytes
        self.privateMemoryMegabytes = privateMemoryMegabytes
        self.recordRoute = recordRoute
    }

    /// Whether `text` is `IPV4:PORT` (the only form written into Kamailio's configuration).
    static func isServiceAddress(_ text: String) -> Bool {
        let parts = text.split(separator: ":")
        guard parts.count == 2, let port = Int(parts[1]), (1...65535).contains(port) else { return false }
        let octets = parts[0].split(separator: ".", omittingEmptySubsequences: false)
        return octets.count == 4 && octets.allSatisfy { Int($0).map { (0...255).contains($0) } ?? false }
    }

    /// Kamailio's memory arguments, clamped.
    var memoryArguments: [String] {
        ["-m", "\(min(max(sharedMemoryMegabytes, 8), 4096))", "-M", "\(min(max(privateMemoryMegabytes, 1), 1024))"]
    }
}
