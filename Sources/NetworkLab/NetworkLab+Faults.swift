import Foundation

extension NetworkLab {
    /// The longest any one fault may last; longer requests are rejected, not clamped silently.
    public static let longestFault = Duration.seconds(600)

    /// Plays `fault` and undoes it (see ``Fault``); returns when the link is back, with the backend that ran.
    ///
    /// - Throws: ``NetworkLabError`` `.unsupported` when this machine cannot do the fault (the
    ///   message says why), `.invalidRequest` for out-of-range bounds, `.commandFailed` otherwise.
    @discardableResult
    public func inject(_ fault: Fault) async throws -> FaultBackend {
        try validate(fault)
        let backend = try backend(for: fault)
        record("\(fault): begin", backend: backend)
        switch fault {
        case .adminDown(let link, let duration):
            try await batch(plan(link).hostNamespace, ["link set \(plan(link).interface) down"])
            try await pause(duration)
            try await bringUp(link)
        case .carrierLoss(let link, let duration):
            try await setPeer(link, up: false)
            try await pause(duration)
            record("\(fault): restoring", backend: backend)
            try await setPeer(link, up: true)
            try await batch(plan(link).hostNamespace, plan(link).routeLines)
        case .addressChange(let link, let order): try await changeAddress(link, order: order)
        case .renumber(let link): try await renumber(link)
        case .defaultRouteLoss(let link, let duration):
            let p = plan(link)
            try await batch(
                p.hostNamespace,
                [
                    "route del default dev \(p.interface) metric \(link.metric)",
                    "route del ::/0 dev \(p.interface) metric \(link.metric)",
                ])
            try await pause(duration)
            try await batch(p.hostNamespace, plan(link).routeLines)
        case .interfaceSwitch(let from, let to, let duration):
            try await switchPrimary(from: from, to: to, for: duration)
        case .linkRecreate(let link, let after):
            try await ip(["-n", plan(link).hostNamespace, "link", "delete", plan(link).interface])
            try await pause(after)
            try await createVeth(plan(link), routes: true)
        case .rename(let link, let name, let duration):
            let old = plan(link).interface
            try await rename(link, to: name)
            try await pause(duration)
            try await rename(link, to: old)
        case .moveToHost(let link, let host, let duration):
            let home = plan(link).hostNamespace
            try await move(link, to: host.namespace)
            try await pause(duration)
            try await move(link, to: home)
        case .flap(let link, let schedule): try await flap(link, schedule)
        case .packetLoss(let link, let percent, let duration):
            var indices = Array(0..<100)
            indices.shuffle(using: &random)
            let dropped = indices.prefix(percent).sorted().map(String.init).joined(separator: ", ")
            let interface = LabText.quoted(plan(link).interface)
            try await withNftRules(
                link,
                output: percent == 0 ? [] : ["oifname \(interface) numgen inc mod 100 { \(dropped) } drop"],
                input: percent == 0 ? [] : ["iifname \(interface) numgen inc mod 100 { \(dropped) } drop"],
                for: duration)
        case .partition(let link, let direction, let duration):
            let interface = LabText.quoted(plan(link).interface)
            try await withNftRules(
                link, output: direction == .inbound ? [] : ["oifname \(interface) drop"],
                input: direction == .outbound ? [] : ["iifname \(interface) drop"], for: duration)
        case .deadPath(let link, let duration): try await withDeadPath(link, for: duration, fault: fault)
        case .rateLimit(let link, let rate, let duration):
            try await withQdisc(link, ["tbf", "rate", "\(rate)bit", "burst", "4kb", "latency", "400ms"], for: duration)
        case .delay(let link, let delay, let jitter, let duration):
            try await withDelayRelay(link, delay: delay, jitter: jitter, for: duration)
        case .netlinkOverrun(let link, let changes):
            let interface = plan(link).interface
            let addresses = (0..<changes).map { "198.19.\($0 / 250).\($0 % 250 + 1)/32" }
            try await batch(
                plan(link).hostNamespace,
                addresses.map { "address add \($0) dev \(interface)" }
                    + addresses.map { "address del \($0) dev \(interface)" })
        case .natMappingExpiry, .natRebinding, .natGatewayReboot: try await playNAT(fault)
        }
        record("\(fault): end", backend: backend)
        return backend
    }

    /// Rejects bounds outside what a lab plays: durations 0…``longestFault``, 1…100,000 flaps.
    func validate(_ fault: Fault) throws {
        func check(_ duration: Duration) throws {
            guard duration >= .zero, duration <= Self.longestFault else {
                throw error(.invalidRequest, "\(fault): durations must be within 0...\(Self.longestFault)")
            }
        }
        switch fault {
        case .adminDown(_, let d), .carrierLoss(_, let d), .defaultRouteLoss(_, let d), .linkRecreate(_, let d),
            .moveToHost(_, _, let d), .partition(_, _, let d), .deadPath(_, let d), .interfaceSwitch(_, _, let d),
            .natGatewayReboot(_, let d):
            try check(d)
        case .rename(_, let name, let d):
            try check(d)
            guard (1...15).contains(name.count), name.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber) })
            else { throw error(.invalidRequest, "\(fault): an interface name is 1-15 ASCII letters or digits") }
        case .flap(_, let schedule):
            let duty = schedule.dutyCycle
            guard (1...100_000).contains(schedule.count), (0.0...1.0).contains(duty), duty != 0, duty != 1,
                schedule.period > Duration.zero,
                schedule.period * schedule.count <= Self.longestFault
            else {
                throw error(.invalidRequest, "\(fault): want 1-100000 flaps, 0<duty<1, within \(Self.longestFault)")
            }
        case .packetLoss(_, let percent, let d):
            try check(d)
            guard (0...100).contains(percent) else { throw error(.invalidRequest, "\(fault): percent is 0-100") }
        case .rateLimit(_, let rate, let d):
            try check(d)
            guard (8_000...10_000_000_000).contains(rate) else {
                throw error(.invalidRequest, "\(fault): rate is 8000-10^10 bit/s")
            }
        case .delay(_, let delay, let jitter, let d):
            try check(d)
            guard delay >= .zero, jitter >= .zero, delay <= .seconds(10), jitter <= delay else {
                throw error(.invalidRequest, "\(fault): delay 0-10s, jitter at most the delay")
            }
        case .netlinkOverrun(_, let changes):
            guard (1...20_000).contains(changes) else { throw error(.invalidRequest, "\(fault): 1-20000 changes") }
        case .addressChange, .renumber, .natMappingExpiry, .natRebinding: break
        }
    }

    /// The backend `fault` needs here, or an `.unsupported` error saying what is missing.
    func backend(for fault: Fault) throws -> FaultBackend {
        switch fault {
        case .packetLoss, .partition, .deadPath:
            guard LabCommand.nft != nil else {
                throw error(.unsupported, "\(fault) needs nftables (`nft`; Debian package nftables)")
            }
            return .nftables
        case .rateLimit:
            guard LabCommand.tc != nil else { throw error(.unsupported, "\(fault) needs `tc` (iproute2)") }
            return .tbf
        case .delay:
            guard LabCommand.tc != nil else { throw error(.unsupported, "\(fault) needs `tc` (iproute2)") }
            return .userSpaceRelay
        case .netlinkOverrun: return .iproute2Batch
        case .natMappingExpiry, .natRebinding, .natGatewayReboot:
            guard LabCommand.nft != nil, LabCommand.conntrack != nil else {
                throw error(.unsupported, "\(fault) needs `nft` and `conntrack` (Debian nftables, conntrack)")
            }
            return .conntrack
        default: return .iproute2
        }
    }

    func pause(_ duration: Duration) async throws {
        if duration > .zero { try await Task.sleep(for: duration) }
    }

}

/// Whole milliseconds of `duration` (truncated), as faults and the timeline print them.
func milliseconds(_ duration: Duration) -> Int64 {
    duration.components.seconds * 1000 + duration.components.attoseconds / 1_000_000_000_000_000
}
