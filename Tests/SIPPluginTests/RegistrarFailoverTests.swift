import Logging
import ResilienceCore
import ResilienceTesting
import Synchronization
import Testing

@testable import SIPPlugin

/// Which registrar target an account uses (RFC 3263 order), when it moves, when it probes the
/// preferred one again; and the shared cache of RFC 3263 answers.
@Suite
struct RegistrarFailoverTests {
    static let primary = SIPTarget(name: "primary.lab.test", address: "198.19.255.1", port: 5060, transport: .udp)
    static let backup = SIPTarget(name: "backup.lab.test", address: "198.19.255.2", port: 5060, transport: .udp)
    static let third = SIPTarget(name: "third.lab.test", address: "198.19.255.3", port: 5060, transport: .udp)

    @Test func aFailureMovesToTheNextTargetAtOnceAndTheLastReturnsToThePreferred() {
        var failover = RegistrarFailover()
        failover.update([Self.primary, Self.backup, Self.third])
        #expect(failover.target == Self.primary)
        let movedOn = failover.failed(Self.primary)
        #expect(movedOn && failover.target == Self.backup)
        // A late failure of a target no longer used changes nothing.
        failover.failed(Self.primary)
        #expect(failover.target == Self.backup)
        let movedAgain = failover.failed(Self.backup)
        #expect(movedAgain && failover.target == Self.third)
        let anotherLeft = failover.failed(Self.third)
        #expect(!anotherLeft, "every target failed: the executor's backoff comes next")
        #expect(failover.target == Self.primary)
    }

    @Test func onABackupThePreferredIsProbedAtAGrowingIntervalNotHammered() {
        let start = ContinuousClock.now
        var failover = RegistrarFailover()
        failover.update([Self.primary, Self.backup])
        failover.failed(Self.primary)
        failover.bound(at: start)
        #expect(failover.probeDue(at: start) == nil)
        #expect(failover.probeDue(at: start + .milliseconds(999)) == nil)
        #expect(failover.probeDue(at: start + .seconds(1)) == Self.primary)
        var now = start + .seconds(1)
        var gaps: [Duration] = []
        for _ in 0..<12 {
            failover.probeFailed(at: now)
            let next = failover.nextProbe!
            gaps.append(next - now)
            #expect(failover.probeDue(at: next - .milliseconds(1)) == nil)
            now = next
        }
        #expect(gaps[0] > .seconds(1.599) && gaps[0] < .seconds(1.601) && gaps.last == .seconds(120), "gaps \(gaps)")
        #expect(zip(gaps, gaps.dropFirst()).allSatisfy { $0 <= $1 })
        failover.probeAnswered()
        #expect(failover.target == Self.primary && failover.probeDue(at: now + .seconds(1000)) == nil)
    }

    @Test func theSameResolutionKeepsTheTargetInUseAndAChangedOneStartsAtItsPreferred() {
        var failover = RegistrarFailover()
        failover.update([Self.primary, Self.backup])
        failover.failed(Self.primary)
        failover.update([Self.primary, Self.backup])
        #expect(failover.target == Self.backup, "a TTL's re-resolution moved the account")
        failover.update([Self.third, Self.primary, Self.backup])
        #expect(failover.target == Self.third)
    }

    /// A lookup that counts its calls and fails while `down` is set.
    final class CountingLookup: Sendable {
        let calls = Mutex(0)
        let down = Mutex(false)
        let address = Mutex("198.19.255.1")

        var lookup: SIPServerLocator.Lookup {
            { name, type in
                self.calls.withLock { $0 += 1 }
                if self.down.withLock({ $0 }) { throw DNSLookupError.noAnswer(name) }
                guard type == .a else { return [] }
                return [DNSRecord(name: name, ttl: 30, data: .a(self.address.withLock { $0 }))]
            }
        }
    }

    static let account = SIPAccount(name: "a", registrarHost: "lab.test", user: "a", domain: "lab.test", password: "p")

    @Test func answersAreCachedForTheirTTLAndAskedAgainAfterItOrAfterANetworkChange() async throws {
        let zone = CountingLookup()
        let clock = ManualClock()
        let directory = RegistrarDirectory(logger: Logger(label: "test"), lookup: zone.lookup)
        #expect(try await directory.targets(of: Self.account, clock: clock).map(\.address) == ["198.19.255.1"])
        let first = zone.calls.withLock { $0 }
        _ = try await directory.targets(of: Self.account, clock: clock)
        #expect(zone.calls.withLock { $0 } == first, "asked again within the TTL")
        // A record change shows once the TTL (30 s) has run out.
        zone.address.withLock { $0 = "198.19.255.2" }
        clock.advance(by: .seconds(29))
        #expect(try await directory.targets(of: Self.account, clock: clock).map(\.address) == ["198.19.255.1"])
        clock.advance(by: .seconds(2))
        #expect(try await directory.targets(of: Self.account, clock: clock).map(\.address) == ["198.19.255.2"])
        let second = zone.calls.withLock { $0 }
        directory.networkChanged()
        _ = try await directory.targets(of: Self.account, clock: clock)
        #expect(zone.calls.withLock { $0 } > second, "not asked again after a network change")
    }

    @Test func withTheDNSServerDownTheCachedAnswerKeepsWorking() async throws {
        let zone = CountingLookup()
        let clock = ManualClock()
        let directory = RegistrarDirectory(logger: Logger(label: "test"), lookup: zone.lookup)
        _ = try await directory.targets(of: Self.account, clock: clock)
        zone.down.withLock { $0 = true }
        clock.advance(by: .seconds(10))
        #expect(try await directory.targets(of: Self.account, clock: clock).map(\.address) == ["198.19.255.1"])
        clock.advance(by: .seconds(60))
        // Past its TTL the answer is served stale while no server answers (RFC 8767).
        #expect(try await directory.targets(of: Self.account, clock: clock).map(\.address) == ["198.19.255.1"])
        let fresh = RegistrarDirectory(logger: Logger(label: "test"), lookup: zone.lookup)
        await #expect(throws: (any Error).self) { try await fresh.targets(of: Self.account, clock: clock) }
    }

    @Test func accountsOfOneRegistrarShareOneResolution() async throws {
        let zone = CountingLookup()
        let directory = RegistrarDirectory(logger: Logger(label: "test"), lookup: zone.lookup)
        let clock = ManualClock()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<50 { group.addTask { _ = try await directory.targets(of: Self.account, clock: clock) } }
            try await group.waitForAll()
        }
        // One resolution: NAPTR, SRV (_sip._udp), A, AAAA.
        #expect(zone.calls.withLock { $0 } == 4)
    }
}
