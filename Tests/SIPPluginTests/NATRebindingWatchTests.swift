import Testing

@testable import SIPPlugin

/// ``NATRebindingWatch`` as a value: which keep-alive answers cost a REGISTER.
struct NATRebindingWatchTests {
    typealias Decision = NATRebindingWatch.Decision

    @Test func oneAddressSpelledTwoWaysIsOneMappingAndAnotherPortIsAnother() {
        #expect(NATRebindingWatch.sameMapping("[2001:db8::7]:5060", "[2001:db8:0:0:0:0:0:7]:5060"))
        #expect(NATRebindingWatch.sameMapping("[2001:DB8::7]:5060", "[2001:db8::7]:5060"))
        #expect(NATRebindingWatch.sameMapping("[::ffff:198.51.100.7]:5060", "198.51.100.7:5060"))
        #expect(NATRebindingWatch.sameMapping("Host.Example:5060", "host.example:5060"))
        #expect(!NATRebindingWatch.sameMapping("198.51.100.7:5060", "198.51.100.7:5061"))
        #expect(!NATRebindingWatch.sameMapping("198.51.100.7:5060", "198.51.100.8:5060"))
        #expect(!NATRebindingWatch.sameMapping("[2001:db8::7]:5060", "[2001:db8::8]:5060"))
    }

    @Test func eachDistinctMappingCostsOneREGISTERWhateverTheRegistrarAnswers() {
        var watch = NATRebindingWatch()
        #expect(watch.handle(seen: "198.51.100.7:2") == .nothing, "nothing registered yet")
        watch.registered("198.51.100.7:1")
        #expect(watch.handle(seen: "198.51.100.7:1") == .nothing)
        #expect(watch.handle(seen: nil) == .nothing)
        let rebinding = Decision.registerAgain(registered: "198.51.100.7:1", seen: "198.51.100.7:2")
        #expect(watch.handle(seen: "198.51.100.7:2") == rebinding)
        #expect(watch.handle(seen: "198.51.100.7:2") == .nothing, "its REGISTER is on its way")
        // The registrar's 2xx still names the old port: said once, then quiet.
        watch.registered("198.51.100.7:1")
        #expect(
            watch.handle(seen: "198.51.100.7:2")
                == .disagreement(registered: "198.51.100.7:1", seen: "198.51.100.7:2"))
        #expect(watch.handle(seen: "198.51.100.7:2") == .nothing)
        // Another rebinding is another REGISTER; one that failed may be tried again.
        let next = Decision.registerAgain(registered: "198.51.100.7:1", seen: "198.51.100.7:3")
        #expect(watch.handle(seen: "198.51.100.7:3") == next)
        watch.registerFailed()
        #expect(watch.handle(seen: "198.51.100.7:3") == next)
        watch.registered("198.51.100.7:3")
        #expect(watch.handle(seen: "198.51.100.7:3") == .nothing)
        #expect(watch.registeredAddress == "198.51.100.7:3")
    }
}
