import ResilienceDaemon
import ResiliencePolicyFile
import Testing

@Suite struct ControlAccessTests {
    let access = ControlAccess(users: [0, 1000], group: 50)

    @Test func rootTheDaemonsUserAndTheGroupsMembersGetInAndNoOneElse() {
        #expect(access.refusal(of: .init(pid: 1, uid: 0, gid: 0)) == nil)
        #expect(access.refusal(of: .init(pid: 1, uid: 1000, gid: 1000)) == nil)
        #expect(access.refusal(of: .init(pid: 1, uid: 2000, gid: 50)) == nil, "primary group")
        #expect(access.refusal(of: .init(pid: 1, uid: 2000, gid: 7)) { [3, 50] } == nil, "supplementary group")
        #expect(
            access.refusal(of: .init(pid: 1, uid: 2000, gid: 7)) { [3] }
                == "uid 2000 is not root, the daemon's user or a member of group 50")
        #expect(
            ControlAccess(users: [0]).refusal(of: .init(pid: 1, uid: 65534, gid: 50))
                == "uid 65534 is not root or the daemon's user", "without a configured group, gids do not matter")
    }

    @Test func theConfigNamesAnExistingGroupOrFailsAtItsLine() throws {
        let config = try configWithoutAccounts(
            "control-group: root\n", file: "/etc/netres/netres.yaml", directory: "/etc/netres")
        #expect(config.controlGroup == 0)
        let error = #expect(throws: PolicyFileError.self) {
            try configWithoutAccounts(
                "\ncontrol-group: no-such-group-here\n", file: "/etc/netres/netres.yaml", directory: "/etc/netres")
        }
        #expect(error?.line == 2)
        #expect(error.map { "\($0)" }?.contains("no-such-group-here") == true)
    }
}
