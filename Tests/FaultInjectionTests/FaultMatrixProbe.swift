import Foundation
import NetworkLab

/// What a fault-matrix cell observes outside the client: packets the phone tried to send to the
/// registrar (an nft counter in the phone's output hook, ahead of any fault's drop rules), whether
/// the wifi path is usable, and the registrar's bindings and subscriptions.
struct FaultMatrixProbe {
    let lab: NetworkLab
    let phone: LabHost
    let wifi: LabLink
    let registrar: LabRegistrar
    let users: [String]
    /// Where the registrar sees the phone's requests come from: a NAT's public address (the
    /// Contact keeps wifi's own); nil: wifi's own address.
    var publicAddress: String? = nil

    /// Installs the counter: every packet the phone sends towards the registrar's addresses.
    func installCounter() async throws {
        let rules = [
            "nft add table inet matrix",
            "nft add chain inet matrix out '{ type filter hook output priority -300; }'",
            // First, counted apart: TCP segments the kernel sends on its own, carrying no SIP:
            // those that close a connection (FIN or RST, ending a transport the client abandoned)
            // and bare ACKs or keep-alive probes (no payload: at most 52 bytes over IPv4 with
            // timestamps, 32 bytes of IPv6 payload).
            "nft add rule inet matrix out ip daddr \(LabAddress.service4) tcp flags \\& \\(fin \\| rst\\) != 0 counter accept",
            "nft add rule inet matrix out ip6 daddr \(LabAddress.service6) tcp flags \\& \\(fin \\| rst\\) != 0 counter accept",
            "nft add rule inet matrix out ip daddr \(LabAddress.service4) meta l4proto tcp ip length \\<= 52 counter accept",
            "nft add rule inet matrix out ip6 daddr \(LabAddress.service6) meta l4proto tcp ip6 length \\<= 32 counter accept",
            "nft add rule inet matrix out ip daddr \(LabAddress.service4) counter",
            "nft add rule inet matrix out ip6 daddr \(LabAddress.service6) counter",
        ]
        try await lab.run(in: phone, ["sh", "-c", rules.joined(separator: " && ")])
    }

    /// One sample, by one process: the packets counted, whether wifi was usable (present, up, with
    /// carrier and a default route), and the packets counted again after that check, so every
    /// packet sent while the check held falls between two samples' counts.
    func sample() async throws -> Sample {
        let script =
            "nft list chain inet matrix out; echo LINK; ip -o link show dev wifi 2>/dev/null; echo ROUTES;"
            + " ip route show default dev wifi 2>/dev/null; echo COUNTER; nft list chain inet matrix out"
        let text = try await lab.run(in: phone, ["sh", "-c", script])
        /// The counters in rule order: the first four count the kernel's own TCP segments, the rest everything else.
        func counters(_ listing: some StringProtocol) -> [Int] {
            let words = listing.split(whereSeparator: \.isWhitespace)
            return words.indices.filter { words[$0] == "packets" && $0 + 1 < words.count }.map {
                Int(words[$0 + 1]) ?? 0
            }
        }
        func packets(_ listing: some StringProtocol) -> Int { counters(listing).dropFirst(4).reduce(0, +) }
        func closing(_ listing: some StringProtocol) -> Int { counters(listing).prefix(4).reduce(0, +) }
        let (head, rest) = split(text, at: "LINK")
        let (link, afterLink) = split(rest, at: "ROUTES")
        let (routes, tail) = split(afterLink, at: "COUNTER")
        let usable = link.contains("LOWER_UP") && link.contains(",UP") && routes.contains("default")
        return Sample(
            before: packets(head), wifiUsable: usable, after: packets(tail), closingBefore: closing(head),
            closingAfter: closing(tail))
    }

    struct Sample {
        var before: Int
        var wifiUsable: Bool
        var after: Int
        var closingBefore = 0
        var closingAfter = 0
    }

    private func split(_ text: String, at marker: String) -> (String, String) {
        guard let range = text.range(of: marker) else { return (text, "") }
        return (String(text[..<range.lowerBound]), String(text[range.upperBound...]))
    }

    /// Waits until the phone sent nothing towards the registrar for `quiet` (at most `attempts`
    /// tries): the app state's own traffic has settled before the fault (in background, the
    /// answer to the presence unsubscribe's final NOTIFY; over TCP, until it is acknowledged, or
    /// the kernel retransmits it after the fault began and it counts as sent while down).
    func waitForQuiet(_ quiet: Duration = .milliseconds(500), attempts: Int = 10) async throws {
        var last = try await sample()
        for _ in 0..<attempts {
            try await Task.sleep(for: quiet)
            let now = try await sample()
            if now.before == last.after && now.closingBefore == last.closingAfter { return }
            last = now
        }
    }

    /// Packets sent while wifi was seen unusable in two samples in a row (sampling every ~100 ms
    /// while `body` runs, at most 600 samples), leaving out the first such pair after the path
    /// went: the client needs a moment to hear of the loss from netlink.
    func sentWhileDown(
        during body: () async throws -> Void
    ) async throws -> (sent: Int, closing: Int, downSamples: Int) {
        let samples = Task {
            var taken: [Sample] = []
            while !Task.isCancelled, taken.count < 600 {
                if let one = try? await sample() { taken.append(one) }
                try? await Task.sleep(for: .milliseconds(100))
            }
            return taken
        }
        do { try await body() } catch {
            samples.cancel()
            throw error
        }
        samples.cancel()
        let taken = await samples.value
        var sent = 0
        var closing = 0
        var down = 0
        var pairs = zip(taken, taken.dropFirst()).makeIterator()
        var previousWasDown = false
        while let (first, second) = pairs.next() {
            let bothDown = !first.wifiUsable && !second.wifiUsable
            if bothDown && previousWasDown {
                sent += second.before - first.after
                closing += second.closingBefore - first.closingAfter
            }
            if bothDown { down += 1 }
            previousWasDown = bothDown
        }
        return (sent, closing, down)
    }

    /// Whether a registrar log line is a request the client sent: not one of the registrar's
    /// notes (`REGISTERED`, `AUTHORIZED`, `FAULT…`), a reply it relayed, or a request of its own
    /// (the reg event's PUBLISH comes from the registrar's address).
    static func sentByClient(_ request: RegistrarRequest) -> Bool {
        let notes = ["REGISTERED", "AUTHORIZED", "FAULT"]
        return !request.isReply && !notes.contains { request.kind.hasPrefix($0) }
            && !(request.fields["src"] ?? "").hasPrefix("\(LabAddress.service4):")
    }

    /// Each account bound exactly once at wifi's current address, and its subscriptions as the
    /// policy allows in `state` (presence of others only in the foreground): the last SUBSCRIBE per
    /// package has a non-zero Expires (or none) and came from the current address, or, for
    /// presence outside the foreground, `Expires: 0`. Nil when converged, else what is missing.
    func divergence(state: String) async throws -> String? {
        let address = await lab.addresses(of: wifi).ipv4
        let bindings = try await registrar.bindings()
        let requests = registrar.requests()
        for user in users {
            let mine = bindings.filter { $0.contact.contains("\(user)@") }.map(\.contact)
            guard mine.count == 1, mine[0].contains("@\(address):") else { return "\(user) bound at \(mine)" }
            for package in ["reg", "message-summary", "presence"] {
                let last = requests.last { $0.kind == "SUBSCRIBE" && $0.user == user && $0.fields["event"] == package }
                guard let last else { return "\(user): no \(package) SUBSCRIBE" }
                let ended = last.fields["expires"] == "0"
                if package == "presence" && state != "foreground" {
                    if !ended { return "\(user): presence still subscribed in \(state)" }
                } else if ended || !(last.fields["src"] ?? "").hasPrefix("\(publicAddress ?? address):") {
                    return "\(user): \(package) last SUBSCRIBE \(last.fields)"
                }
            }
        }
        return nil
    }
}
