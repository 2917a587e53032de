import Foundation
import Glibc
import ResilienceCore
import Synchronization

/// The lab's own push service (the APNs/FCM stand-in of RFC 8599): an HTTP endpoint the registrar,
/// as a push proxy (``RegistrarOptions/pushService``), calls with
/// `GET /push?account=USER&kind=call|message|refresh&prid=TOKEN`; it answers 200 at once and
/// delivers the push to the client host later, by running the test's command there
/// (`netres ctl push @ACCOUNT@ --kind @KIND@`, say), after a seeded delay, or loses it. Told each
/// saved binding (`GET /binding?…`, ``Binding``), it also makes the `refresh` push RFC 8599 §4.1
/// asks for before the binding expires (see ``NetworkLab/startPushService(in:address:port:deliverIn:command:delay:loss:refreshLead:)``).
///
/// Invariants:
/// - the listening socket is made inside the host (a namespace thread of its own); its own thread accepts
///   and answers, wakes at least every 20 ms, and ends with ``stop()`` (the lab calls it when it
///   shuts down), closing the socket;
/// - a request is hostile: at most 8 KiB is read, within 1 s; only a well-formed one (an account of
///   1…64 of `A-Za-z0-9._-`, a known kind, a token of `A-Za-z0-9._:~-`) is delivered, and only
///   those words reach the command; anything else is answered 400 and recorded as refused;
/// - delays and losses are drawn from a generator seeded by the lab's seed: a replay repeats them.
public final class LabPushService: Sendable {
    /// One push request the registrar made.
    public struct Request: Hashable, Sendable {
        public var account: String
        public var kind: String
        public var token: String
        /// When it arrived (CLOCK_REALTIME seconds, as the registrar's `at=`).
        public var at: Double
        /// Whether the seeded loss dropped it.
        public var lost: Bool
    }

    /// Where the registrar reaches it.
    public let address: String
    public let port: Int
    private let running = Mutex(true)
    /// Each account's pending refresh push (at most one: a new binding replaces it).
    let refreshes = Mutex<[String: Task<Void, Never>]>([:])
    let bindingLog = Mutex<[Binding]>([])
    private let log = Mutex<(accepted: [Request], refused: Int, delivered: [Request])>(([], 0, []))

    init(address: String, port: Int) {
        self.address = address
        self.port = port
    }

    /// The well-formed requests so far, in arrival order.
    public var requests: [Request] { log.withLock { $0.accepted } }
    /// Requests refused as malformed.
    public var refused: Int { log.withLock { $0.refused } }
    /// The pushes whose command ran (exit status 0), in order.
    public var delivered: [Request] { log.withLock { $0.delivered } }

    /// Stops accepting and cancels every pending refresh push; the socket closes within ~20 ms.
    /// Safe to call twice.
    public func stop() {
        running.withLock { $0 = false }
        let pending = refreshes.withLock { refreshes in
            defer { refreshes = [:] }
            return Array(refreshes.values)
        }
        for task in pending { task.cancel() }
    }

    var isRunning: Bool { running.withLock { $0 } }

    func record(_ request: Request?) {
        log.withLock { log in
            if let request { log.accepted.append(request) } else { log.refused += 1 }
        }
    }

    func recordDelivery(_ request: Request) { log.withLock { $0.delivered.append(request) } }

    /// The request's push, when its line is `GET /push?…` with well-formed words.
    static func parse(_ head: String, at: Double) -> Request? {
        guard let words = queryWords(head, path: "/push") else { return nil }
        guard let account = words["account"], isAccount(account),
            let kind = words["kind"], ["call", "message", "refresh"].contains(kind)
        else { return nil }
        let token = words["prid"] ?? ""
        guard isToken(token) else { return nil }
        return Request(account: account, kind: kind, token: token, at: at, lost: false)
    }
}

extension NetworkLab {
    /// Starts the lab's push service in `host` on `address:port` (see ``LabPushService``).
    /// - Parameters:
    ///   - host: the host it listens in (the registrar's).
    ///   - address: the address it listens on (the registrar's, ``LabAddress/service4``).
    ///   - port: the TCP port it listens on.
    ///   - target: the host the push is delivered in (the client's).
    ///   - command: run in `target` for each push, `@ACCOUNT@` and `@KIND@` replaced by the request's.
    ///   - delay: the delivery delay, drawn uniformly from it.
    ///   - loss: the share of pushes lost (0…1).
    ///   - refreshLead: how long before a binding expires its `refresh` push is made (nil: a third
    ///     of its lifetime, at most 60 s; see ``LabPushService/refreshDelay(expires:lead:)``).
    public func startPushService(
        in host: LabHost, address: String, port: Int = 8088, deliverIn target: LabHost, command: [String],
        delay: ClosedRange<Duration> = .zero ... .zero, loss: Double = 0, refreshLead: Duration? = nil
    ) async throws -> LabPushService {
        let fd = try await socket(in: host, domain: AF_INET, type: Int32(SOCK_STREAM.rawValue))
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var socketAddress = sockaddr_in()
        socketAddress.sin_family = sa_family_t(AF_INET)
        socketAddress.sin_port = in_port_t(UInt16(port).bigEndian)
        inet_pton(AF_INET, address, &socketAddress.sin_addr)
        let bound = withUnsafePointer(to: &socketAddress) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0, listen(fd, 16) == 0 else {
            let text = errorText()
            close(fd)
            throw error(.commandFailed, "push service on \(address):\(port) in \(host): \(text)")
        }
        let service = LabPushService(address: address, port: port)
        let random = Mutex(SplitMix64(seed: self.random.next()))
        let lab = self
        let deliver: @Sendable (LabPushService.Request) -> Void = { request in
            let (wait, lost) = random.withLock { generator in
                let span = UInt64(max(0, (delay.upperBound - delay.lowerBound).nanosecondsValue))
                let offset = span == 0 ? 0 : UInt64.random(in: 0...span, using: &generator)
                return (
                    delay.lowerBound + .nanoseconds(Int64(offset)), Double.random(in: 0..<1, using: &generator) < loss
                )
            }
            var request = request
            request.lost = lost
            service.record(request)
            guard !lost else { return }
            let argv = command.map {
                $0.replacingOccurrences(of: "@ACCOUNT@", with: request.account)
                    .replacingOccurrences(of: "@KIND@", with: request.kind)
            }
            Task {
                try? await Task.sleep(for: wait)
                guard service.isRunning, (try? await lab.run(in: target, argv, timeout: .seconds(10))) != nil else {
                    return
                }
                service.recordDelivery(request)
            }
        }
        let binding: @Sendable (LabPushService.Binding) -> Void = { binding in
            service.schedule(binding, after: LabPushService.refreshDelay(expires: binding.expires, lead: refreshLead)) {
                deliver($0)
            }
        }
        let thread = Thread {
            LabPushService.serve(fd, service: service, deliver: deliver, binding: binding)
            close(fd)
        }
        thread.name = "netlab-push"
        thread.start()
        onShutdown.append { service.stop() }
        return service
    }
}

extension LabPushService {
    /// Accepts and answers until ``stop()``: each connection is read (≤ 8 KiB, ≤ 1 s), answered
    /// 200 (a well-formed push, then handed to `deliver`) or 400, and closed.
    static func serve(
        _ listener: Int32, service: LabPushService, deliver: (Request) -> Void, binding: (Binding) -> Void
    ) {
        while service.isRunning {
            var watched = pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
            guard poll(&watched, 1, 20) > 0 else { continue }
            let connection = accept(listener, nil, nil)
            guard connection >= 0 else { continue }
            _ = fcntl(connection, F_SETFD, FD_CLOEXEC)
            var timeout = timeval(tv_sec: 1, tv_usec: 0)
            setsockopt(connection, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            var head: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 2048)
            while head.count < 8192, !head.ends(with: Array("\r\n\r\n".utf8)) {
                let count = read(connection, &buffer, buffer.count)
                guard count > 0 else { break }
                head += buffer[0..<count]
            }
            var now = timespec()
            clock_gettime(CLOCK_REALTIME, &now)
            let text = String(decoding: head, as: UTF8.self)
            let at = Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
            let saved = parseBinding(text, at: at)
            let request = saved == nil ? parse(text, at: at) : nil
            let reply = request == nil && saved == nil ? "HTTP/1.1 400 Bad Request" : "HTTP/1.1 200 OK"
            let bytes = Array((reply + "\r\nContent-Length: 0\r\nConnection: close\r\n\r\n").utf8)
            _ = bytes.withUnsafeBytes { write(connection, $0.baseAddress, $0.count) }
            close(connection)
            if let saved {
                binding(saved)
            } else if let request {
                deliver(request)
            } else {
                service.record(nil)
            }
        }
    }
}

extension Array where Element == UInt8 {
    fileprivate func ends(with suffix: [UInt8]) -> Bool {
        count >= suffix.count && Array(self.suffix(suffix.count)) == suffix
    }
}
