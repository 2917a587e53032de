import ResilienceCore
import Testing

struct NetworkSnapshotChangesTests {
    static let before = Fixture.merged(Fixture.online(2), Fixture.online(3, address: "198.18.1.2"))
    static var after: NetworkSnapshot {
        var s = Fixture.merged(
            Fixture.online(2, address: "198.18.0.9", metric: 5), Fixture.online(4, address: "198.18.2.2"))
        s.links[2]!.name = "renamed"
        s.addresses.insert(InterfaceAddress(ifindex: 4, family: .ipv6, address: "2001:db8::4", prefixLength: 64))
        return s
    }

    @Test(arguments: [(before, after), (after, before), (before, .empty), (.empty, after), (before, before)])
    func applyingTheChangesReachesTheTarget(from: NetworkSnapshot, to: NetworkSnapshot) {
        let kinds = from.changes(to: to)
        #expect(kinds.reduce(from) { $0.applying($1) } == to)
        if from == to { #expect(kinds.isEmpty) }
    }

    @Test func removalsComeFirstAndNothingRefersToAMissingLink() {
        var state = Self.before
        for kind in Self.before.changes(to: Self.after) {
            state.apply(kind)
            for address in state.addresses { #expect(state.links[address.ifindex] != nil) }
        }
    }

    @Test func aFlagChangeIsAnAddressChangeNotARemoval() {
        var tentative = Fixture.v4(2)
        tentative.flags = 0x40
        var from = Fixture.online()
        from.addresses = [tentative]
        #expect(from.changes(to: Fixture.online()) == [.addressChanged(from: tentative, to: Fixture.v4(2))])
    }

    @Test func removingALinkRemovesItsAddressesAndRoutes() {
        let after = Fixture.online().applying(.linkRemoved(Fixture.link(2)))
        #expect(after == .empty)
    }

    @Test func replayingAnEventIsHarmless() {
        let added = Fixture.online().applying(.addressAdded(Fixture.v4(2)))
        #expect(added == Fixture.online())
        let removed = NetworkSnapshot.empty.applying(.addressRemoved(Fixture.v4(2)))
        #expect(removed == .empty)
    }
}
