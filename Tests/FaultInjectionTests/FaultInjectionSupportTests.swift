import Foundation
import NetworkLab
import Testing

/// Policy: the namespace suites need root and iproute2. Where they are missing the suites are
/// disabled, this test prints a loud banner, and under CI (`CI=true`) it fails: CI must never
/// pass by skipping the real network tests.
struct FaultInjectionSupportTests {
    @Test func namespaceSuitesCanRun() {
        guard !NetworkLab.isSupported else { return }
        let banner = "!!! FaultInjectionTests DISABLED: need root and iproute2 (ip) — namespace tests did not run !!!"
        print(
            String(repeating: "!", count: banner.count) + "\n" + banner + "\n"
                + String(repeating: "!", count: banner.count))
        if ProcessInfo.processInfo.environment["CI"] == "true" {
            Issue.record("CI=true but the namespace suites cannot run: \(banner)")
        }
    }
}

/// The same for the real phones of ``PhoneCallTests``: Debian baresip (`baresip-core`, in
/// `scripts/install-deps.sh test`) missing under CI is a failure, not a skip.
struct RealPhoneSupportTests {
    @Test func realPhoneSuitesCanRun() {
        guard NetworkLab.isSupported, !LabBaresip.isInstalled else { return }
        print("!!! PhoneCallTests DISABLED: need baresip (Debian baresip-core) — real-phone tests did not run !!!")
        if ProcessInfo.processInfo.environment["CI"] == "true" {
            Issue.record("CI=true but baresip is missing: PhoneCallTests cannot run")
        }
    }
}

/// The same for ``PJSIPAdapterTests``: pjsua2 in `.build/pjsua2-venv` (`scripts/install-deps.sh
/// pjsua2`, run by `make test`) missing under CI is a failure, not a skip.
struct PJSIPSupportTests {
    @Test func pjsipSuitesCanRun() {
        guard NetworkLab.isSupported, !PJSIPCallLab.isAvailable else { return }
        print("!!! PJSIPAdapterTests DISABLED: need .build/pjsua2-venv (scripts/install-deps.sh pjsua2) !!!")
        if ProcessInfo.processInfo.environment["CI"] == "true" {
            Issue.record("CI=true but pjsua2 is missing: PJSIPAdapterTests cannot run")
        }
    }
}

extension Trait where Self == ConditionTrait {
    /// Enables a suite only where namespaces can be made; see ``FaultInjectionSupportTests`` for
    /// what happens elsewhere (a loud banner, and a failure under CI).
    static var needsNamespaces: Self { .enabled(if: NetworkLab.isSupported, "needs root and iproute2") }
}
