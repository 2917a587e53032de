import Foundation
import Glibc
import NetworkLab

/// The registrar's round trip as a client host sees it: `count` OPTIONS (at most 100) from a UDP
/// socket in `host`, each answered by Kamailio at once (200, stateless), through whatever lies
/// between (a NAT gateway included). The floor the benches' recovery figures are read against.
///
/// Invariants: every wait is bounded (2 s per answer); an unanswered OPTIONS is no sample; the
/// socket is closed before this returns.
enum RegistrarRoundTrip {
    /// The answered round trips; throws when none was answered.
    static func measure(
        in lab: NetworkLab, host: LabHost, from localAddress: String, to registrar: String, port: Int, count: Int = 20
    ) async throws -> [Duration] {
        let fd = try await lab.socket(in: host, domain: AF_INET, type: Int32(SOCK_DGRAM.rawValue))
        defer { close(fd) }
        var timeout = timeval(tv_sec: 2, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let connected = connectIPv4(fd, to: registrar, port: port)
        guard connected == 0 else { throw BenchError("cannot connect to the registrar: \(errno)") }
        var samples: [Duration] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        for index in 0..<min(max(count, 1), 100) {
            let request = """
                OPTIONS sip:\(registrar):\(port) SIP/2.0\r
                Via: SIP/2.0/UDP \(localAddress):5099;rport;branch=z9hG4bK-bench-\(index)\r
                Max-Forwards: 70\r
                From: <sip:bench@\(registrar)>;tag=bench\r
                To: <sip:\(registrar)>\r
                Call-ID: bench-rtt-\(index)\r
                CSeq: 1 OPTIONS\r
                Content-Length: 0\r
                \r

                """
            let start = ContinuousClock.now
            _ = Array(request.utf8).withUnsafeBytes { send(fd, $0.baseAddress, $0.count, 0) }
            guard recv(fd, &buffer, buffer.count, 0) > 0 else { continue }
            samples.append(ContinuousClock.now - start)
        }
        guard !samples.isEmpty else { throw BenchError("the registrar answered no OPTIONS") }
        return samples
    }
}
