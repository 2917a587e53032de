/// How a ``LabRegistrar`` starts: the digest algorithm it challenges with and, optionally, a TLS listener.
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

    public init(
        digestAlgorithm: String = "", tlsConfiguration: String? = nil, sharedMemoryMegabytes: Int = 32,
        privateMemoryMegabytes: Int = 4
    ) {
        self.digestAlgorithm = digestAlgorithm
        self.tlsConfiguration = tlsConfiguration
        self.sharedMemoryMegabytes = sharedMemoryMegabytes
        self.privateMemoryMegabytes = privateMemoryMegabytes
    }

    /// Kamailio's memory arguments, clamped.
    var memoryArguments: [String] {
        ["-m", "\(min(max(sharedMemoryMegabytes, 8), 4096))", "-M", "\(min(max(privateMemoryMegabytes, 1), 1024))"]
    }
}
