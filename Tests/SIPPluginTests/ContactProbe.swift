import ChildProcesses
import Foundation
import Glibc
import NIOCore

@testable import SIPPlugin

/// A source that is not the registrar, reaching an account's Contact straight (the far end of a
/// call that skips the proxy, an OPTIONS probe): blocking sockets on a thread of its own, every
/// wait bounded.
enum ContactProbe {
    /// Host and port of a Contact URI (`sip:user@host:port;params`).
    static func hostPort(of contact: String) -> (host: String, port: Int)? {
        guard let at = contact.firstIndex(of: "@") else { return nil }
        let rest = contact[contact.index(after: at)...].prefix { $0 != ";" && $0 != ">" }
        guard let colon = rest.lastIndex(of: ":"), let port = Int(rest[rest.index(after: colon)...]) else { return nil }
        return (String(rest[..<colon]), port)
    }

    /// An OPTIONS to `uri` as a peer at `sentBy` sends it, asking for `rport`.
    static func options(to uri: String, sentBy: String, transport: String = "UDP") -> SIPMessage {
        var request = SIPMessage.request("OPTIONS", uri: uri)
        request.headers.add("Via", "SIP/2.0/\(transport) \(sentBy);rport;branch=z9hG4bKprobe\(randomToken())")
        request.headers.add("From", "<sip:probe@198.18.0.77>;tag=\(randomToken())")
        request.headers.add("To", "<\(uri)>")
        request.headers.add("Call-ID", randomToken())
        request.headers.add("CSeq", "1 OPTIONS")
        request.headers.add("Max-Forwards", "70")
        return request
    }

    /// Sends an OPTIONS to `contact` over UDP from a socket of its own; its answer (nil after
    /// `seconds`) and the probe's port.
    static func optionsOverUDP(to contact: String, within seconds: Double = 5) async throws -> (SIPMessage?, Int) {
        guard let (host, port) = hostPort(of: contact) else { throw HarnessError("no host:port in \(contact)") }
        let probe = try UDPTestPeer()
        let request = options(to: contact, sentBy: "127.0.0.1:\(probe.port)")
        let answer = await probe.run { probe -> SIPMessage? in
            probe.send(request.serialized(), to: address(host, port))
            while let (bytes, _) = probe.receive(within: seconds) {
                if let message = try? SIPParser.parse(datagram: bytes), !message.isRequest { return message }
            }
            return nil
        }
        return (answer, probe.port)
    }

    /// One framed SIP message read from `fd` within `seconds`; nil on silence or when the other
    /// side closed (`closed` then says so).
    static func receive(on fd: Int32, within seconds: Double) -> (message: SIPMessage?, closed: Bool) {
        let deadline = Date().addingTimeInterval(seconds)
        var decoder = SIPFrameDecoder()
        var buffer = ByteBuffer()
        var chunk = [UInt8](repeating: 0, count: 4096)
        while Date() < deadline {
            while let frame = try? decoder.decode(buffer: &buffer) {
                if case .message(let message) = frame { return (message, false) }
            }
            let count = recv(fd, &chunk, chunk.count, 0)
            if count == 0 { return (nil, true) }
            if count > 0 { buffer.writeBytes(chunk[0..<count]) }
        }
        return (nil, false)
    }

    /// Sends an OPTIONS to `contact` over a new TCP connection; its answer (nil on silence),
    /// the probe's port, and whether the connection was refused.
    static func optionsOverTCP(to contact: String, within seconds: Double = 5) async throws -> (
        answer: SIPMessage?, port: Int, refused: Bool
    ) {
        guard let (host, port) = hostPort(of: contact) else { throw HarnessError("no host:port in \(contact)") }
        return await OffThePool.run(named: "netres-test-probe") {
            guard let fd = connect(host, port) else { return (nil, 0, true) }
            defer { close(fd) }
            let local = localPort(of: fd)
            let bytes = options(to: contact, sentBy: "127.0.0.1:\(local)", transport: "TCP").serialized()
            _ = bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            return (receive(on: fd, within: seconds).message, local, false)
        }
    }
}
