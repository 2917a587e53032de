import Foundation
import Glibc
import NetworkLab
import Testing

extension LabCommandTests {
    /// The repository's `examples/lab-scenario.yaml` (found from this file, not bundled).
    static let exampleScenario = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("examples/lab-scenario.yaml")
        .path

    /// The example scenario's links and registrar with its first step only (Wi-Fi loses its
    /// carrier for 3 s beside cellular), played by `netres lab run` with the built `netres run`
    /// (alice over UDP on both links, hold-down 0) as the command. The printed timeline, one clock
    /// for the lab's steps and the registrar's log, shows the switch on the wire: the REGISTER
    /// from the cellular address (198.18.2.2, the second link's, as the example's header says) and
    /// its binding come after the fault began and before the lab started giving the carrier back.
    /// Before the flows were bound to the path's interface, the kernel routed them by Wi-Fi's
    /// carrier-less route and the REGISTER only arrived after the carrier returned.
    @Test(.enabled(if: LabRegistrar.isInstalled, "needs kamailio"))
    func theExampleScenariosCarrierLossShowsTheSwitchToCellularOnTheWire() async throws {
        let example = try String(contentsOfFile: Self.exampleScenario, encoding: .utf8)
        let lines = example.split(separator: "\n").map(String.init)
        let header = lines.prefix { $0 != "timeline:" }.filter { !$0.hasPrefix("#") && !$0.hasPrefix("duration:") }
        let firstStep = try #require(lines.first { $0.hasPrefix("  - at ") }, "the example has a timeline")
        try #require(
            firstStep.contains("carrier-loss wifi") && header.contains("  - {name: cellular, metric: 200}"),
            "the example's first fault is Wi-Fi's carrier loss beside cellular: \(firstStep)")
        let folder = NSTemporaryDirectory() + "netres-lab-example-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let registrar = LabAddress.service4
        try """
        interfaces: [wifi, cellular]
        hold-down: 0
        state-directory: \(folder)/state
        accounts: [{name: alice, registrar: \(registrar), domain: \(registrar), transport: udp, user: alice,
                    password: secret-alice}]

        """.write(toFile: folder + "/netres.yaml", atomically: true, encoding: .utf8)
        let file = try scenario((header + ["duration: 9s", "timeline:", firstStep]).joined(separator: "\n") + "\n")
        defer { unlink(file) }
        let (status, output) = try await netres([
            "lab", "run", file, "--", Self.netres, "run", "--config", folder + "/netres.yaml",
        ])
        #expect(status == 0, "stopped at the end of the duration: \(output.suffix(3000))")
        let printed = output.split(separator: "\n").map(String.init)
        func first(_ texts: String..., after start: Int = 0) -> Int? {
            printed.indices.first { index in index >= start && texts.allSatisfy { printed[index].contains($0) } }
        }
        let began = try #require(first("carrier-loss wifi", ": begin"), "\(output.suffix(3000))")
        let restoring = try #require(first("carrier-loss wifi", ": restoring"), "\(output.suffix(3000))")
        let register = first("registrar: REGISTER", "src=198.18.2.2:", after: began)
        let bound = first("registrar: REGISTERED", "alice@198.18.2.2:", after: began)
        #expect(
            register.map { $0 < restoring } == true, "REGISTER over cellular during the loss: \(output.suffix(3000))")
        #expect(bound.map { $0 < restoring } == true, "bound over cellular during the loss: \(output.suffix(3000))")
        // The whole example stays valid (its dead-path step among them), and the help names that fault.
        let (valid, checked) = try await netres(["lab", "check", Self.exampleScenario])
        #expect(valid == 0, "\(checked)")
        let (_, help) = try await netres(["lab", "--help"])
        #expect(help.contains("dead-path"), "\(help)")
    }
}
