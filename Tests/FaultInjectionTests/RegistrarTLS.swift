import ChildProcesses
import Foundation
import NetworkLab

/// The TLS side of a ``DaemonLab``: ``TestCertificates`` in the lab's folder (server name
/// `registrar.test` and the registrar's address) and the `tls.cfg` text Kamailio's tls module reads.
struct RegistrarTLS: Sendable {
    enum ServerCertificate: Sendable {
        case valid
        case expired
        /// Valid, and the registrar asks every client for a certificate signed by the lab's CA.
        case validRequiringClientCertificate
    }

    static var isInstalled: Bool { TestCertificates.openssl != nil }
    /// The name in the server certificate (besides the registrar's address).
    static let serverName = "registrar.test"

    let certificates: TestCertificates
    /// What ``RegistrarOptions/tlsConfiguration`` takes.
    let kamailioConfiguration: String
    /// PEM of the CA that signed the server certificate: what a client should trust.
    var caFile: String { certificates.caFile }
    /// PEM of a CA that signed nothing here: trusting only it must fail.
    var otherCAFile: String { certificates.otherCAFile }
    /// The account lines of `tls:` presenting the lab's client certificate.
    var clientCertificateLines: String {
        "certificate-file: \(certificates.clientCertificate), key-file: \(certificates.clientKey)"
    }

    init(directory: String, server: ServerCertificate) async throws {
        certificates = try await TestCertificates(
            folder: directory + "/tls", serverName: Self.serverName, serverAddress: LabAddress.service4,
            validity: server == .expired ? .expired : .valid)
        kamailioConfiguration = certificates.kamailioConfig(requireClient: server == .validRequiringClientCertificate)
    }
}
