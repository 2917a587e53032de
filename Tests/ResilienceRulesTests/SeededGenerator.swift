import ResilienceCore
import ResilienceRules

/// SplitMix64: a small deterministic generator, so every property run is reproducible from its seed.
struct SeededGenerator: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476C_E484_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    mutating func pick<T>(_ items: [T]) -> T { items[Int.random(in: 0..<items.count, using: &self)] }
    mutating func chance(_ p: Double) -> Bool { Double.random(in: 0..<1, using: &self) < p }

    /// 1 to 12 services of random kinds, accounts and expiries.
    mutating func services(at t0: ContinuousClock.Instant) -> [ClientService] {
        (0..<Int.random(in: 1...12, using: &self)).map { i in
            let kind = pick(ServiceKind.representatives)
            let expires: ContinuousClock.Instant? =
                chance(0.2) ? nil : t0 + .seconds(Int.random(in: -100...4000, using: &self))
            return ClientService(id: ServiceID("s\(i)"), kind: kind, account: pick(["a", "b", nil]), expires: expires)
        }
    }

    /// Any trigger; call, refresh and flow triggers name services of the set (or a missing one), pushes
    /// one of its accounts.
    mutating func trigger(for services: [ClientService]) -> Trigger {
        let ids = services.map(\.id) + ["missing"]
        switch Int.random(in: 0..<10, using: &self) {
        case 0: return .network(.lost(pick(LossReason.allCases)))
        case 1: return .network(.restored)
        case 2: return .network(.changed(pick(PathChange.allCases)))
        case 3: return .callStateChanged(pick(ids))
        case 4: return .refreshDue(ids.filter { _ in chance(0.5) })
        case 5: return chance(0.5) ? .pushTokenChanged : .shutdown
        case 6:
            return chance(0.5)
                ? .flowLost(ids.filter { _ in chance(0.5) }) : .flowPingDue(ids.filter { _ in chance(0.5) })
        case 7: return .started
        case 8:
            let account = pick(["a", "b"])
            return chance(0.5)
                ? .push(try! Push(account: account, kind: pick(PushKind.allCases))) : .pushWindowEnded(account: account)
        default: return .app(pick(AppEvent.allCases))
        }
    }
}
