import ChildProcesses
import Foundation

/// Certificates for a ``RegistrarLab`` with a TLS listener, made by the `openssl` CLI in the
/// lab's folder: a CA of the lab's own, a second CA nobody trusts, and the registrar's server
/// certificate (names `registrar.test` and 198.18.0.1), valid or already expired. Also writes the
/// `tls.cfg` Kamailio's tls module reads.
///
/// Invariant: every key and certificate lives in the lab's folder (removed with it); nothing is
/// installed into a system trust store.
struct RegistrarTLS: Sendable {
    enum ServerCertificate: Sendable {
        case valid
        /// Expired yesterday.
        case expired
    }

    static let openssl = ["/usr/bin/openssl", "/bin/openssl"].first { FileManager.default.isExecutableFile(atPath: $0) }
    static var isInstalled: Bool { openssl != nil }
    /// The name in the server certificate (besides 198.18.0.1).
    static let serverName = "registrar.test"

    /// PEM of the CA that signed the server certificate: what a client should trust.
    let caFile: String
    /// PEM of a CA that signed nothing here: trusting only it must fail.
    let otherCAFile: String

    init(directory: String, server: ServerCertificate) throws {
        let folder = directory + "/tls"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        caFile = folder + "/ca.pem"
        otherCAFile = folder + "/other-ca.pem"
        for (name, cn) in [("ca", "netres test CA"), ("other-ca", "netres untrusted CA")] {
            try Self.run([
                "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout",
                "\(folder)/\(name).key", "-out", "\(folder)/\(name).pem", "-subj", "/CN=\(cn)", "-days", "2",
                "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign",
            ])
        }
        try Self.run([
            "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout",
            "\(folder)/server.key", "-out", "\(folder)/server.csr", "-subj", "/CN=\(Self.serverName)",
        ])
        try "subjectAltName=DNS:\(Self.serverName),IP:198.18.0.1\nextendedKeyUsage=serverAuth\n".write(
            toFile: "\(folder)/server.ext", atomically: true, encoding: .utf8)
        // -days -1: not valid after yesterday.
        try Self.run([
            "x509", "-req", "-in", "\(folder)/server.csr", "-CA", caFile, "-CAkey", "\(folder)/ca.key",
            "-CAcreateserial", "-out", "\(folder)/server.pem", "-days", server == .valid ? "2" : "-1",
            "-extfile", "\(folder)/server.ext",
        ])
        try """
        [server:default]
        method = TLSv1.2+
        verify_certificate = no
        require_certificate = no
        private_key = \(folder)/server.key
        certificate = \(folder)/server.pem

        """.write(toFile: directory + "/tls.cfg", atomically: true, encoding: .utf8)
    }

    /// Runs `openssl ARGUMENTS` to its end (bounded: 20 s) and fails on a non-zero status.
    private static func run(_ arguments: [String]) throws {
        guard let openssl else { throw NetworkNamespace.CommandFailed(description: "openssl is not installed") }
        let child = try ChildProcess([openssl] + arguments, output: "/dev/null")
        guard blockingWait(seconds: 20, { child.hasExited() }) else {
            kill(child.pid, SIGKILL)
            _ = child.waitForExit()
            throw NetworkNamespace.CommandFailed(description: "openssl \(arguments.first ?? "") hung")
        }
        // hasExited reaped it: its status is gone, so check what it had to write instead.
        if let out = arguments.firstIndex(of: "-out").map({ arguments[$0 + 1] }),
            !FileManager.default.fileExists(atPath: out)
        {
            throw NetworkNamespace.CommandFailed(description: "openssl \(arguments.joined(separator: " ")) failed")
        }
    }
}
