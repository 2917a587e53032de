import Foundation
import ResilienceHooks
import Testing

/// The rules as a pure function, then the same rules on real files (symbolic links, owners).
@Suite struct HookTrustTests {
    let trust = HookTrust(owners: [0, 1000])

    @Test(
        arguments: [
            (HookTrust.Facts(kind: .regular, owner: 0, mode: 0o755), nil),
            (HookTrust.Facts(kind: .regular, owner: 1000, mode: 0o700), nil),
            (HookTrust.Facts(kind: .regular, owner: 0, mode: 0o757), "writable by others (mode 0757)"),
            (HookTrust.Facts(kind: .regular, owner: 0, mode: 0o775), "writable by its group (mode 0775)"),
            (
                HookTrust.Facts(kind: .regular, owner: 65534, mode: 0o755),
                "owned by uid 65534, not root or the daemon's user"
            ),
            (HookTrust.Facts(kind: .other, owner: 0, mode: 0o755), "not a regular file"),
        ] as [(HookTrust.Facts, String?)])
    func aHookFileIsTrustedOnlyWhenOwnedByRootOrTheDaemonAndWritableByNoOneElse(facts: HookTrust.Facts, why: String?) {
        #expect(trust.refusal(facts, wanted: .regular) == why)
    }

    @Test func aDirectoryFollowsTheSameRules() {
        #expect(trust.refusal(.init(kind: .directory, owner: 0, mode: 0o755), wanted: .directory) == nil)
        #expect(trust.refusal(.init(kind: .directory, owner: 0, mode: 0o1777), wanted: .directory) != nil)
        #expect(trust.refusal(.init(kind: .regular, owner: 0, mode: 0o755), wanted: .directory) == "not a directory")
    }

    /// A scratch folder of real files, removed at the end.
    final class Folder {
        let root = "/tmp/netres-hook-trust-\(UUID().uuidString)"
        init() throws { try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true) }
        deinit { try? FileManager.default.removeItem(atPath: root) }

        func file(_ name: String, mode: Int) throws -> String {
            let path = root + "/" + name
            try "#!/bin/sh\n".write(toFile: path, atomically: true, encoding: .utf8)
            try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: path)
            return path
        }
    }

    @Test func realFilesSymbolicLinksAndDirectoriesAreCheckedAtTheirTarget() throws {
        let folder = try Folder()
        let trust = HookTrust()
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: folder.root)
        #expect(trust.refusal(directory: folder.root) == nil)
        #expect(trust.refusal(hook: try folder.file("good", mode: 0o755)) == nil)
        #expect(trust.refusal(hook: try folder.file("world", mode: 0o757))?.contains("writable by others") == true)
        #expect(trust.refusal(hook: try folder.file("group", mode: 0o775))?.contains("writable by its group") == true)
        #expect(trust.refusal(hook: try folder.file("plain", mode: 0o644))?.contains("not executable") == true)

        // A link in a good place to a file anyone may rewrite is judged by its target.
        let planted = try folder.file("planted", mode: 0o777)
        try FileManager.default.createSymbolicLink(atPath: folder.root + "/link", withDestinationPath: planted)
        let why = try #require(trust.refusal(hook: folder.root + "/link"))
        #expect(why.contains("its target \(planted)") && why.contains("writable by others"), "\(why)")

        // A good file in a directory anyone may write to can be swapped: refused.
        let open = folder.root + "/open"
        try FileManager.default.createDirectory(atPath: open, withIntermediateDirectories: false)
        try FileManager.default.setAttributes([.posixPermissions: 0o777], ofItemAtPath: open)
        let inOpen = open + "/hook"
        try "#!/bin/sh\n".write(toFile: inOpen, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: inOpen)
        #expect(trust.refusal(directory: open)?.contains("writable by others") == true)
        try FileManager.default.createSymbolicLink(atPath: folder.root + "/via-open", withDestinationPath: inOpen)
        #expect(trust.refusal(hook: folder.root + "/via-open")?.contains("its directory \(open)") == true)
        #expect(trust.refusal(hook: folder.root + "/missing")?.contains("cannot resolve") == true)
    }

    @Test(.enabled(if: geteuid() == 0, "needs root to give a file to nobody"))
    func aFileOwnedBySomeoneElseIsRefused() throws {
        let folder = try Folder()
        let path = try folder.file("nobodys", mode: 0o755)
        #expect(chown(path, 65534, 65534) == 0)
        #expect(HookTrust().refusal(hook: path)?.contains("owned by uid 65534") == true)
    }
}

/// Issue 25: a hooks directory reached through a symbolic link that sits in a directory anyone
/// may write to was trusted (anyone could point the link at their own hooks).
@Suite struct HookDirectoryPathTests {
    @Test func aDirectoryReachedThroughALinkInAWorldWritableDirectoryIsRefused() throws {
        let folder = try HookTrustTests.Folder()
        let trust = HookTrust()
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: folder.root)
        let hooks = folder.root + "/hooks"
        try FileManager.default.createDirectory(atPath: hooks, withIntermediateDirectories: false)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: hooks)
        let open = folder.root + "/open"
        try FileManager.default.createDirectory(atPath: open, withIntermediateDirectories: false)
        try FileManager.default.setAttributes([.posixPermissions: 0o777], ofItemAtPath: open)
        try FileManager.default.createSymbolicLink(atPath: open + "/hooks", withDestinationPath: hooks)
        #expect(trust.refusal(directory: hooks) == nil, "the real directory is fine")
        let why = try #require(trust.refusal(directory: open + "/hooks"), "the link's directory is world-writable")
        #expect(why.contains("\(open)/hooks sits in \(open)") && why.contains("writable by others"), "\(why)")
        // The same link in a directory only its owner writes to is fine.
        try FileManager.default.createSymbolicLink(atPath: folder.root + "/link", withDestinationPath: hooks)
        #expect(trust.refusal(directory: folder.root + "/link") == nil)
    }

    @Test func aStickyDirectoryIsAcceptedOnTheWayOnlyForEntriesOfATrustedOwner() {
        let trust = HookTrust(owners: [0, 1000])
        let sticky = HookTrust.Facts(kind: .directory, owner: 0, mode: 0o1777)
        #expect(trust.refusal(entry: .init(kind: .directory, owner: 1000, mode: 0o755), in: sticky) == nil)
        #expect(trust.refusal(entry: .init(kind: .other, owner: 65534, mode: 0o777), in: sticky) != nil)
        let open = HookTrust.Facts(kind: .directory, owner: 0, mode: 0o777)
        #expect(trust.refusal(entry: .init(kind: .directory, owner: 0, mode: 0o755), in: open) != nil)
    }
}
