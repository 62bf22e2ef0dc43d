import Testing
import UnitConfig
import UnitCore

/// `[job] payments`, `payment_required` and `currency`: what the terminal offers at clear.
@Suite struct FareConfigurationTests {
    let unit = "[unit]\nid = \"T7\"\nfleet = \"n\"\n"
    let terminal = "[input.serial]\ndevice = \"/dev/ttyUSB0\"\n"

    func problems(_ text: String) -> [String] {
        do {
            _ = try UnitConfiguration(document: ConfigValue.parseTOML(unit + text))
            return []
        } catch {
            return error.problems
        }
    }

    @Test func theDefaultsOfferCashCardAndAccountInEuros() throws {
        let config = try UnitConfiguration(document: ConfigValue.parseTOML(unit))
        #expect(config.job.payments == ["cash", "card", "account"] && !config.job.paymentRequired && config.job.currency == "EUR")
        let settings = try UnitConfiguration(document: ConfigValue.parseTOML(
            unit + terminal + "[job]\npayments = [\"card\"]\npayment_required = true\ncurrency = \"ZAR\"\n")).unitSettings
        #expect(settings.payments == ["card"] && settings.paymentRequired && settings.currency == "ZAR")
        #expect(try UnitConfiguration(document: ConfigValue.parseTOML(unit + "[job]\npayments = []\n")).job.payments.isEmpty)
    }

    @Test func whatTheTerminalCannotOfferIsRefused() {
        #expect(problems("[job]\npayments = [\"a\", \"b\", \"c\", \"d\", \"e\"]\n") == ["job.payments holds more than 4 methods (one terminal digit key each)"])
        #expect(problems("[job]\npayments = [\"Cash\"]\n") == ["job.payments[0] must be 1 to 16 of a-z, 0-9, _ and -, found \"Cash\""])
        #expect(problems("[job]\npayments = [\"cash\", \"cash\"]\n") == ["job.payments names a method twice"])
        #expect(problems("[job]\ncurrency = \"euro\"\n") == ["job.currency must be an ISO 4217 code of three upper-case letters, found \"euro\""])
        let needs = ["job.payment_required = true needs job.payments and [input.serial], where the payment is picked"]
        #expect(problems("[job]\npayment_required = true\n") == needs)
        #expect(problems(terminal + "[job]\npayment_required = true\npayments = []\n") == needs)
        #expect(problems(terminal + "[job]\npayment_required = true\n").isEmpty)
    }
}
