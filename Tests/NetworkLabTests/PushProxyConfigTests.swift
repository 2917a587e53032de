import Foundation
import Testing

@testable import NetworkLab

/// The registrar's push proxy configuration and the push service's reading of requests, without
/// namespaces: the text Kamailio gets, and what the service lets through to a command line.
struct PushProxyConfigTests {
    static func render(pushService: String?) -> String {
        RegistrarConfig.render(
            address4: "198.18.0.1", address6: nil, port: 5060, directory: "/tmp/nr-test", modules: "/usr/lib/kamailio",
            digestAlgorithm: "", pushService: pushService)
    }

    @Test func withoutAPushServiceNoPlaceholderOrPushModuleIsLeft() {
        let text = Self.render(pushService: nil)
        #expect(!text.contains("@PUSH"))
        #expect(!text.contains("tsilo") && !text.contains("msilo") && !text.contains("http_client"))
    }

    @Test func withAPushServiceTheProxyHoldsInvitesStoresMessagesAndAsksTheService() {
        let text = Self.render(pushService: "198.18.0.1:8088")
        // Every placeholder filled (the `# @RELAY_…@` comments are rtpengine's, filled by relay()).
        #expect(text.range(of: "@(?!RELAY_)[A-Z0-9_]+@", options: .regularExpression) == nil)
        for needle in [
            "loadmodule \"tsilo.so\"", "loadmodule \"msilo.so\"", "loadmodule \"http_client.so\"",
            "ts_store(\"sip:$rU@$rd\")", "ts_append(\"location\", \"$tu\")", "m_dump()", "m_store(\"$ru\")",
            "http://198.18.0.1:8088/push?account=$rU&kind=$var(kind)&prid=$var(prid)",
            "modparam(\"msilo\", \"outbound_proxy\", \"sip:198.18.0.1:5060\")", "route[PUSH_INVITE]",
        ] {
            #expect(text.contains(needle), "missing \(needle)")
        }
    }

    @Test func onlyAnIPv4AddressAndPortIsAcceptedAsThePushService() {
        #expect(RegistrarOptions.isServiceAddress("198.18.0.1:8088"))
        for bad in ["198.18.0.1", "198.18.0.1:0", "host:80", "1.2.3.4:80\");", "[2001:db8::1]:80", "1.2.3.256:80"] {
            #expect(!RegistrarOptions.isServiceAddress(bad), "\(bad)")
        }
    }

    @Test func theServiceTakesOnlyWellFormedPushRequests() {
        let good = LabPushService.parse(
            "GET /push?account=alice&kind=call&prid=f00d:1 HTTP/1.1\r\nHost: x\r\n\r\n", at: 1)
        #expect(good?.account == "alice" && good?.kind == "call" && good?.token == "f00d:1")
        for bad in [
            "POST /push?account=alice&kind=call HTTP/1.1\r\n\r\n", "GET /push?account=alice&kind=sms HTTP/1.1\r\n\r\n",
            "GET /push?account=al;rm%20-rf&kind=call HTTP/1.1\r\n\r\n", "GET /push?kind=call HTTP/1.1\r\n\r\n",
            "GET /push?account=\(String(repeating: "a", count: 65))&kind=call HTTP/1.1\r\n\r\n", "garbage",
        ] {
            #expect(LabPushService.parse(bad, at: 1) == nil, "\(bad)")
        }
    }
}
