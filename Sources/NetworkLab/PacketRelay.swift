import Foundation
import Glibc
import Synchronization

/// The I/O half of the user-space delay relay: it reads every frame arriving on `input` (an
/// `AF_PACKET` socket with virtio-net headers, so checksum offload and GSO survive the trip),
/// holds it in a ``DelayLine`` and writes it out of `output` past the queueing discipline
/// (`PACKET_QDISC_BYPASS`, so the tc redirect does not catch it again).
///
/// Invariants:
/// - both sockets are opened inside the host by ``NamespaceThread``; the relay's own thread never
///   calls `setns`, and is the only one touching the delay line;
/// - the thread wakes at least every 20 ms, so ``stop()`` returns within about that;
/// - on stop, frames still waiting are sent at once (none is silently lost) and both sockets close.
final class PacketRelay: Sendable {
    struct Stats: Sendable, Hashable {
        var forwarded = 0
        var dropped = 0
        var sendErrors = 0
    }

    private let running = Mutex(true)
    private let finished = Mutex(false)
    private let counters = Mutex(Stats())

    /// Opens the sockets in `namespace` and starts relaying from `input` to `output`.
    /// - Throws: `.unsupported` when the kernel lacks packet sockets or their options, `.commandFailed`
    ///   when an interface is missing.
    static func start(namespace: String, input: String, output: String, line: DelayLine) async throws -> PacketRelay {
        let (reader, writer) = try await NamespaceThread.run(in: namespace) {
            let reader = try packetSocket(bound: input, protocol: ethPAll, bypassQdisc: false)
            do {
                return (reader, try packetSocket(bound: output, protocol: 0, bypassQdisc: true))
            } catch {
                close(reader)
                throw error
            }
        }
        let relay = PacketRelay()
        let thread = Thread {
            relay.relay(reader: reader, writer: writer, line: line)
            close(reader)
            close(writer)
            relay.finished.withLock { $0 = true }
        }
        thread.name = "netlab-relay"
        thread.start()
        return relay
    }

    private init() {}

    var stats: Stats { counters.withLock { $0 } }

    /// Stops the thread (it flushes what waits) and waits for it to finish; safe to call twice.
    func stop() async {
        running.withLock { $0 = false }
        while !finished.withLock({ $0 }) { try? await Task.sleep(for: .milliseconds(5)) }
    }

    /// The loop: read what arrived, send what is due, until asked to stop; then flush.
    private func relay(reader: Int32, writer: Int32, line: DelayLine) {
        var line = line
        var buffer = [UInt8](repeating: 0, count: 70_000)
        var sender = [UInt8](repeating: 0, count: 20)
        while running.withLock({ $0 }) {
            let now = ContinuousClock.now
            let wait = line.nextDue.map { max(.zero, min($0 - now, .milliseconds(20))) } ?? .milliseconds(20)
            var fds = pollfd(fd: reader, events: Int16(POLLIN), revents: 0)
            _ = poll(&fds, 1, Int32(clamping: milliseconds(wait + .microseconds(999))))
            for _ in 0..<512 {  // bounded per wake-up, so due frames never wait behind a flood
                var length = socklen_t(sender.count)
                let count = buffer.withUnsafeMutableBytes { bytes in
                    sender.withUnsafeMutableBytes { address in
                        recvfrom(
                            reader, bytes.baseAddress, bytes.count, Int32(MSG_DONTWAIT),
                            address.baseAddress!.assumingMemoryBound(to: sockaddr.self), &length)
                    }
                }
                guard count > 0 else { break }
                if sender[10] == Self.packetOutgoing { continue }  // sll_pkttype: sent by this host
                line.arrive(Array(buffer[0..<count]), at: ContinuousClock.now)
            }
            send(line.takeDue(at: ContinuousClock.now), writer: writer, line: line)
        }
        send(line.takeDue(at: ContinuousClock.now, flush: true), writer: writer, line: line)
    }

    private func send(_ frames: [[UInt8]], writer: Int32, line: DelayLine) {
        var errors = 0
        for frame in frames where Glibc.send(writer, frame, frame.count, 0) != frame.count { errors += 1 }
        counters.withLock {
            $0.forwarded = line.forwarded
            $0.dropped = line.dropped
            $0.sendErrors += errors
        }
    }

    static let ethPAll: UInt16 = 0x0003
    static let packetOutgoing: UInt8 = 4
    static let solPacket: Int32 = 263
    static let packetVnetHdr: Int32 = 15
    static let packetQdiscBypass: Int32 = 20

    /// A raw packet socket bound to `interface` (in the calling thread's namespace), with virtio-net headers.
    static func packetSocket(bound interface: String, protocol proto: UInt16, bypassQdisc: Bool) throws -> Int32 {
        let index = if_nametoindex(interface)
        guard index > 0 else { throw NetworkLabError(.commandFailed, "no interface \(LabText.quoted(interface))") }
        let fd = socket(AF_PACKET, Int32(SOCK_RAW.rawValue) | Int32(SOCK_CLOEXEC.rawValue), Int32(proto.bigEndian))
        guard fd >= 0 else { throw NetworkLabError(.unsupported, "AF_PACKET socket: \(errorText())") }
        var one: Int32 = 1
        for option in bypassQdisc ? [packetVnetHdr, packetQdiscBypass] : [packetVnetHdr]
        where setsockopt(fd, solPacket, option, &one, socklen_t(MemoryLayout<Int32>.size)) != 0 {
            let reason = errorText()
            close(fd)
            throw NetworkLabError(.unsupported, "packet socket option \(option): \(reason)")
        }
        // struct sockaddr_ll: family (host order), protocol (network order), ifindex, then zeros.
        var address = [UInt8](repeating: 0, count: 20)
        withUnsafeBytes(of: UInt16(AF_PACKET)) { address.replaceSubrange(0..<2, with: $0) }
        withUnsafeBytes(of: proto.bigEndian) { address.replaceSubrange(2..<4, with: $0) }
        withUnsafeBytes(of: Int32(index)) { address.replaceSubrange(4..<8, with: $0) }
        let bound = address.withUnsafeBytes {
            bind(fd, $0.baseAddress!.assumingMemoryBound(to: sockaddr.self), socklen_t(20))
        }
        guard bound == 0 else {
            let reason = errorText()
            close(fd)
            throw NetworkLabError(.commandFailed, "bind to \(LabText.quoted(interface)): \(reason)")
        }
        return fd
    }
}
