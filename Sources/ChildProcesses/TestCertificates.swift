internal import Foundation
internal import Glibc

/// Certificates for TLS tests and benchmarks, made by the `openssl` CLI in a folder of the
/// caller's: a CA, a second CA that signed nothing, and a server certificate (a DNS name and an IP
/// address) signed by the first, valid for 2 days or expired since yesterday.
///
/// Invariant: every key and certificate lives in `folder` (the caller removes it); nothing is
/// installed into a system trust store.
public struct TestCertificates: Sendable {
    public enum Validity: Sendable {
        case valid
        /// Not valid after yesterday.
        case expired
    }

    public static let openssl = ["/usr/bin/openssl", "/bin/openssl"].first {
        FileManager.default.isExecutableFile(atPath: $0)
    }

    public let caFile: String
    /// A CA that signed nothing here: trusting only it must fail.
    public let otherCAFile: String
    public let serverCertificate: String
    public let serverKey: String
    /// A client certificate (CN `netres-client`, clientAuth) and its key, signed by the CA.
    public let clientCertificate: String
    public let clientKey: String

    /// Makes the certificates; openssl runs and is waited for through ``OffThePool``, so the
    /// calling task holds no thread of Swift's pool meanwhile.
    /// - Throws: ``ChildProcess/SpawnFailed`` when openssl is missing, fails or hangs (20 s each).
    public init(folder: String, serverName: String, serverAddress: String, validity: Validity) async throws {
        self = try await OffThePool.run(named: "netres-openssl") {
            try TestCertificates(
                making: folder, serverName: serverName, serverAddress: serverAddress, validity: validity)
        }
    }

    /// ``init(folder:serverName:serverAddress:validity:)`` on the calling thread, which it blocks.
    private init(making folder: String, serverName: String, serverAddress: String, validity: Validity) throws {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        caFile = folder + "/ca.pem"
        otherCAFile = folder + "/other-ca.pem"
        serverCertificate = folder + "/server.pem"
        serverKey = folder + "/server.key"
        clientCertificate = folder + "/client.pem"
        clientKey = folder + "/client.key"
        let curve = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        for (name, cn) in [("ca", "netres test CA"), ("other-ca", "netres untrusted CA")] {
            try Self.run(
                ["req", "-x509"] + curve + [
                    "-keyout", "\(folder)/\(name).key", "-out", "\(folder)/\(name).pem", "-subj", "/CN=\(cn)",
                    "-days", "2", "-addext", "basicConstraints=critical,CA:TRUE", "-addext",
                    "keyUsage=critical,keyCertSign,cRLSign",
                ])
        }
        try Self.run(
            ["req"] + curve + ["-keyout", serverKey, "-out", "\(folder)/server.csr", "-subj", "/CN=\(serverName)"])
        try "subjectAltName=DNS:\(serverName),IP:\(serverAddress)\nextendedKeyUsage=serverAuth\n".write(
            toFile: "\(folder)/server.ext", atomically: true, encoding: .utf8)
        try Self.run([
            "x509", "-req", "-in", "\(folder)/server.csr", "-CA", caFile, "-CAkey", "\(folder)/ca.key",
            "-CAcreateserial", "-out", serverCertificate, "-days", validity == .valid ? "2" : "-1",
            "-extfile", "\(folder)/server.ext",
        ])
        try Self.run(
            ["req"] + curve + ["-keyout", clientKey, "-out", "\(folder)/client.csr", "-subj", "/CN=netres-client"])
        try "extendedKeyUsage=clientAuth\n".write(toFile: "\(folder)/client.ext", atomically: true, encoding: .utf8)
        try Self.run([
            "x509", "-req", "-in", "\(folder)/client.csr", "-CA", caFile, "-CAkey", "\(folder)/ca.key",
            "-CAcreateserial", "-out", clientCertificate, "-days", "2", "-extfile", "\(folder)/client.ext",
        ])
    }

    /// The `tls.cfg` of Kamailio's tls module serving the server certificate (TLS 1.2+); with
    /// `requireClient`, a client must present a certificate signed by the CA.
    public func kamailioConfig(requireClient: Bool = false) -> String {
        """
        [server:default]
        method = TLSv1.2+
        verify_certificate = \(requireClient ? "yes" : "no")
        require_certificate = \(requireClient ? "yes" : "no")
        \(requireClient ? "ca_list = \(caFile)" : "")
        private_key = \(serverKey)
        certificate = \(serverCertificate)

        """
    }

    /// Runs `openssl ARGUMENTS` to its end (bounded: 20 s); fails unless its `-out` file appeared.
    private static func run(_ arguments: [String]) throws {
        guard let openssl else { throw ChildProcess.SpawnFailed(description: "openssl is not installed") }
        let child = try ChildProcess([openssl] + arguments, output: "/dev/null")
        for _ in 0..<1000 where !child.hasExited() { usleep(20_000) }
        if !child.hasExited() {
            kill(child.pid, SIGKILL)
            _ = child.waitForExit()
            throw ChildProcess.SpawnFailed(description: "openssl \(arguments.first ?? "") hung")
        }
        if let out = arguments.firstIndex(of: "-out").map({ arguments[$0 + 1] }),
            !FileManager.default.fileExists(atPath: out)
        {
            throw ChildProcess.SpawnFailed(description: "openssl \(arguments.joined(separator: " ")) failed")
        }
    }
}
