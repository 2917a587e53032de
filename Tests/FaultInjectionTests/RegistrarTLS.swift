import ChildProcesses
import Foundation

/// The TLS side of a ``RegistrarLab``: ``TestCertificates`` in the lab's folder (server name
/// `registrar.test` and 198.18.0.1) and the `tls.cfg` Kamailio's tls module reads from it.
struct RegistrarTLS: Sendable {
    enum ServerCertificate: Sendable {
        case valid
        case expired
        /// Valid, and the registrar asks every client for a certificate signed by the lab's CA.
        case validRequiringClientCertificate
    }

    static var isInstalled: Bool { TestCertificates.openssl != nil }
    /// The name in the server certificate (besides 198.18.0.1).
    static let serverName = "registrar.test"

    let certificates: TestCertificates
    /// PEM of the CA that signed the server certificate: what a client should trust.
    var caFile: String { certificates.caFile }
    /// PEM of a CA that signed nothing here: trusting only it must fail.
    var otherCAFile: String { certificates.otherCAFile }
    /// The account lines of `tls:` presenting the lab's client certificate.
    var clientCertificateLines: String {
        "certificate-file: \(certificates.clientCertificate), key-file: \(certificates.clientKey)"
    }

    init(directory: String, server: ServerCertificate) throws {
        certificates = try TestCertificates(
            folder: directory + "/tls", serverName: Self.serverName, serverAddress: "198.18.0.1",
            validity: server == .expired ? .expired : .valid)
        try certificates.kamailioConfig(requireClient: server == .validRequiringClientCertificate).write(
            toFile: directory + "/tls.cfg", atomically: true, encoding: .utf8)
    }
}
