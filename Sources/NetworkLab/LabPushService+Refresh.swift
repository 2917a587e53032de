import Foundation
import Glibc
import Synchronization

/// The refresh push of RFC 8599 §4.1: the proxy pushes before a binding expires, so a sleeping
/// device (which keeps no refresh timer of its own) registers again in time.
///
/// The lab's proxy tells the service each binding it saves (`GET /binding?account=USER&expires=
/// SECONDS&prid=TOKEN`: the seconds the registrar granted, the binding's `pn-prid`); the service
/// keeps one timer per account and, when it fires, makes a `refresh` push like any other (recorded
/// in ``requests``, delayed and lost as seeded, delivered by the test's command).
///
/// Invariants: at most one pending refresh per account, replaced by each new binding and dropped
/// by one without a token or lifetime (an unregister); all cancelled by ``stop()``; a pending
/// refresh never fires after ``stop()``.
extension LabPushService {
    /// One binding the registrar saved, as it told the service.
    public struct Binding: Hashable, Sendable {
        public var account: String
        /// Seconds the binding has left (0 or less: none, nothing to refresh).
        public var expires: Int
        /// Its `pn-prid` ("" when it has none).
        public var token: String
        /// When it arrived (CLOCK_REALTIME seconds, as the registrar's `at=`).
        public var at: Double
    }

    /// The bindings the registrar reported, in arrival order.
    public var bindings: [Binding] { bindingLog.withLock { $0 } }

    /// When the refresh push of a binding with `expires` seconds left is made: `lead` before the
    /// expiry (nil: a third of the lifetime, at most 60 s), never sooner than 1 s from now.
    public static func refreshDelay(expires: Int, lead: Duration?) -> Duration {
        let lifetime = Duration.seconds(max(0, min(expires, 86_400)))
        let before = lead ?? min(lifetime / 3, .seconds(60))
        return max(.seconds(1), lifetime - before)
    }

    /// Records `binding` and (re)arms its account's refresh push for `delay` from now.
    func schedule(_ binding: Binding, after delay: Duration, push: @escaping @Sendable (Request) -> Void) {
        bindingLog.withLock { $0.append(binding) }
        let task: Task<Void, Never>? =
            binding.expires > 0 && !binding.token.isEmpty && isRunning
            ? Task { [weak self] in
                try? await Task.sleep(for: delay)
                guard !Task.isCancelled, let self, self.isRunning else { return }
                var now = timespec()
                clock_gettime(CLOCK_REALTIME, &now)
                push(
                    Request(
                        account: binding.account, kind: "refresh", token: binding.token,
                        at: Double(now.tv_sec) + Double(now.tv_nsec) / 1e9, lost: false))
            } : nil
        let replaced = refreshes.withLock { refreshes in
            defer { refreshes[binding.account] = task }
            return refreshes[binding.account]
        }
        replaced?.cancel()
    }

    /// The binding a `GET /binding?…` line reports, when its words are well formed.
    static func parseBinding(_ head: String, at: Double) -> Binding? {
        guard let words = queryWords(head, path: "/binding"), let account = words["account"], isAccount(account),
            let text = words["expires"], text.count <= 12, let expires = Int(text)
        else { return nil }
        let token = words["prid"] ?? ""
        guard isToken(token) else { return nil }
        return Binding(account: account, expires: max(-1, min(expires, 86_400)), token: token, at: at)
    }

    /// The `name=value` words of a request line `GET PATH?…` (at most 8), nil when it is not one.
    static func queryWords(_ head: String, path: String) -> [String: String]? {
        guard let line = head.split(separator: "\r\n", maxSplits: 1).first,
            line.hasPrefix("GET \(path)?"), let target = line.split(separator: " ").dropFirst().first,
            let query = target.split(separator: "?", maxSplits: 1).last
        else { return nil }
        var words: [String: String] = [:]
        for pair in query.split(separator: "&").prefix(8) {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts.count == 2 else { return nil }
            words[String(parts[0])] = String(parts[1])
        }
        return words
    }

    static let nameCharacters = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")

    /// 1…64 of `A-Za-z0-9._-`.
    static func isAccount(_ text: String) -> Bool {
        (1...64).contains(text.count) && text.allSatisfy(nameCharacters.contains)
    }

    /// At most 4096 of `A-Za-z0-9._:~-` (empty allowed).
    static func isToken(_ text: String) -> Bool {
        text.count <= 4096 && text.allSatisfy(nameCharacters.union(":~").contains)
    }
}
