import Foundation
import NetworkLab
import Testing

struct LabOwnershipTests {
    @Test func labObjectNamesCarryTheirOwnersPID() {
        #expect(LabOwnership.owner(of: "netlab-4242-abc-client") == 4242)
        #expect(LabOwnership.owner(of: "netlab-x-client") == nil)
        #expect(LabOwnership.owner(of: "nr-1234") == nil)
        #expect(LabOwnership.owner(of: "netlab-99999999999-a") == nil)
    }

    @Test(.needsLab) func aLabLeavesNoNamespaceOrFolderAfterShutdown() async throws {
        let lab = try NetworkLab()
        _ = try await LabFixture(lab)
        let prefix = lab.directory.replacingOccurrences(of: "/tmp/", with: "") + "-"
        #expect(LabOwnership.namespaces().filter { $0.hasPrefix(prefix) }.count == 2)
        await lab.shutdown()
        #expect(LabOwnership.namespaces().filter { $0.hasPrefix(prefix) }.isEmpty)
        #expect(!FileManager.default.fileExists(atPath: lab.directory))
    }
}
